/**
 * The built-in allowlist of the `defaults-and-allowlist` policy: hosts a developer's computer
 * needs for ordinary work (package registries, source hosting, language toolchains, OS package
 * mirrors), on ports 80 and 443 only. docs/egress.md lists the same hosts; a test keeps the two
 * in step.
 */

/** Ports every default host is allowed on. */
export const defaultHostPorts: readonly number[] = [80, 443];

/** The default hosts, grouped for the docs. Wildcards match subdomains only, not the bare name. */
export const defaultHostGroups: Readonly<Record<string, readonly string[]>> = {
  "Source hosting": [
    "github.com",
    "*.github.com",
    "*.githubusercontent.com",
    "ghcr.io",
    "gitlab.com",
    "registry.gitlab.com",
    "bitbucket.org",
  ],
  "JavaScript and TypeScript": [
    "registry.npmjs.org",
    "registry.npmjs.com",
    "registry.yarnpkg.com",
    "repo.yarnpkg.com",
    "nodejs.org",
    "jsr.io",
    "deno.land",
    "dl.deno.land",
    "bun.sh",
    "cdn.jsdelivr.net",
    "unpkg.com",
  ],
  Python: [
    "pypi.org",
    "files.pythonhosted.org",
    "conda.anaconda.org",
    "repo.anaconda.com",
    "astral.sh",
  ],
  Rust: [
    "crates.io",
    "index.crates.io",
    "static.crates.io",
    "static.rust-lang.org",
    "sh.rustup.rs",
  ],
  Go: ["proxy.golang.org", "sum.golang.org", "go.dev", "dl.google.com"],
  "Ruby, PHP, Elixir": [
    "rubygems.org",
    "index.rubygems.org",
    "packagist.org",
    "repo.packagist.org",
    "hex.pm",
    "repo.hex.pm",
  ],
  "Java and Kotlin": [
    "repo1.maven.org",
    "repo.maven.apache.org",
    "plugins.gradle.org",
    "services.gradle.org",
    "downloads.gradle.org",
  ],
  ".NET": ["api.nuget.org"],
  "Container images": [
    "registry-1.docker.io",
    "auth.docker.io",
    "production.cloudflare.docker.com",
    "index.docker.io",
  ],
  "Operating system packages": [
    "deb.debian.org",
    "security.debian.org",
    "archive.ubuntu.com",
    "security.ubuntu.com",
    "dl-cdn.alpinelinux.org",
  ],
};

/** Every default host, in the order of `defaultHostGroups`. */
export const defaultHosts: readonly string[] = Object.values(defaultHostGroups).flat();
