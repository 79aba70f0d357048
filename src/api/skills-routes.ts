/**
 * The skills API (docs/api.md "Skills", docs/skills.md): an account's skill library, shared by
 * its bots. A skill is made from fields (`POST /v1/skills` with JSON) or from an archive of its
 * folder (`POST /v1/skills` or `PUT /v1/skills/{name}/archive` with a tar, tar.gz or zip body).
 *
 * Invariants:
 *   SKAPI1 every route acts on the caller's own skills only: another account's skill answers 404,
 *          exactly like a missing one.
 *   SKAPI2 every write is audited in the same transaction as the change (store SKST1), with the
 *          caller as actor.
 *   SKAPI3 an archive body is limited to archiveLimits.maxArchiveBytes as sent (app.ts's body
 *          limit, `isSkillArchiveUpload`), and to the skill's limits once unpacked (archive.ts).
 */
import type { Context, Hono } from "hono";
import { z } from "zod";
import { RoostError } from "../errors/index.ts";
import { skillLimits, skillPathProblem, type Api } from "../protocol/index.ts";
import { archiveKindOf, archiveLimits, type SkillService } from "../skills/index.ts";
import type { Account, Skill, SkillFileInfo, SkillSummary } from "../store/index.ts";
import { attachmentDisposition } from "./content-disposition.ts";
import { invalidRequest, readJson, refuseBody, text } from "./validation.ts";

const iso = (epochMs: number) => new Date(epochMs).toISOString();

export function skillSummaryView(skill: SkillSummary): Api.SkillSummary {
  return {
    name: skill.name,
    description: skill.description,
    sizeBytes: skill.totalBytes,
    fileCount: skill.fileCount,
    digest: skill.digest,
    createdAt: iso(skill.createdAt),
    updatedAt: iso(skill.updatedAt),
  };
}

export function skillDetailView(skill: Skill, files: readonly SkillFileInfo[]): Api.SkillDetail {
  return {
    ...skillSummaryView(skill),
    body: skill.body,
    files: files.map((file) => ({
      path: file.path,
      sizeBytes: file.size,
      executable: (file.mode & 0o111) !== 0,
      sha256: file.sha256,
    })),
  };
}

const createBody = z.strictObject({
  name: text("name", { min: 1, max: 64 }),
  description: text("description", { min: 1, max: skillLimits.maxDescriptionChars }),
  body: text("body", { min: 1, max: skillLimits.maxBodyBytes }),
});
const patchBody = z
  .strictObject({
    description: text("description", { min: 1, max: skillLimits.maxDescriptionChars }).optional(),
    body: text("body", { min: 1, max: skillLimits.maxBodyBytes }).optional(),
  })
  .refine((body) => body.description !== undefined || body.body !== undefined, {
    error:
      "send description, body or both (a skill is renamed by deleting it and creating it anew; its files are replaced with PUT /v1/skills/{name}/archive)",
  });

const mediaTypes =
  "JSON {name, description, body}, or the skill's folder as an archive: Content-Type application/x-tar, application/gzip (a .tar.gz) or application/zip";

/** SKAPI3: whether a request is an archive upload, which gets the archive's body limit. */
export function isSkillArchiveUpload(
  method: string,
  path: string,
  contentType: string | undefined,
): boolean {
  if (archiveKindOf(contentType) === undefined) return false;
  return (
    (method === "POST" && path === "/v1/skills") ||
    (method === "PUT" && /^\/v1\/skills\/[^/]+\/archive$/.test(path))
  );
}

type AppContext = Context<{ Variables: { account: Account } }>;

export function registerSkillRoutes(
  app: Hono<{ Variables: { account: Account } }>,
  deps: { skills: SkillService },
) {
  const { skills } = deps;
  const actor = (context: AppContext) => {
    const account = context.get("account");
    return { accountId: account.id, actorAccountId: account.id }; // SKAPI1, SKAPI2
  };
  const detail = async (context: AppContext, name: string) => {
    const { skill, files } = await skills.get(context.get("account").id, name);
    return skillDetailView(skill, files);
  };
  const archiveBody = async (context: AppContext) => {
    const kind = archiveKindOf(context.req.header("content-type"));
    if (kind === undefined) return undefined;
    return { kind, bytes: new Uint8Array(await context.req.arrayBuffer()) };
  };

  app.get("/v1/skills", async (context) => {
    const list = await skills.available(context.get("account").id, null);
    return context.json({
      skills: list.map(skillSummaryView),
      limits: {
        maxSkills: skillLimits.maxSkills,
        maxDescriptionChars: skillLimits.maxDescriptionChars,
        maxBodyBytes: skillLimits.maxBodyBytes,
        maxFiles: skillLimits.maxFiles,
        maxSkillBytes: skillLimits.maxSkillBytes,
        maxAccountBytes: skillLimits.maxAccountBytes,
        maxArchiveBytes: archiveLimits.maxArchiveBytes,
      },
    } satisfies Api.SkillList);
  });

  app.post("/v1/skills", async (context) => {
    const archive = await archiveBody(context);
    if (archive !== undefined) {
      const { skill } = await skills.putArchive(actor(context), { ...archive, mode: "create" });
      return context.json(await detail(context, skill.name), 201);
    }
    if (!/^application\/json\b/i.test(context.req.header("content-type") ?? ""))
      throw new RoostError("unsupported_media_type", `send ${mediaTypes}`);
    const body = await readJson(context, createBody);
    const skill = await skills.create(actor(context), body);
    return context.json(await detail(context, skill.name), 201);
  });

  app.get("/v1/skills/:name", async (context) =>
    context.json(await detail(context, context.req.param("name"))),
  );

  app.patch("/v1/skills/:name", async (context) => {
    const name = context.req.param("name");
    await skills.get(context.get("account").id, name); // SKAPI1: 404 before reading the body
    const body = await readJson(context, patchBody);
    await skills.update(actor(context), name, body);
    return context.json(await detail(context, name));
  });

  app.put("/v1/skills/:name/archive", async (context) => {
    const name = context.req.param("name");
    const archive = await archiveBody(context);
    if (archive === undefined)
      throw new RoostError(
        "unsupported_media_type",
        "send the skill's folder as an archive: Content-Type application/x-tar, application/gzip (a .tar.gz) or application/zip",
      );
    const { created } = await skills.putArchive(actor(context), {
      ...archive,
      mode: "upsert",
      name,
    });
    return context.json(await detail(context, name), created ? 201 : 200);
  });

  app.delete("/v1/skills/:name", async (context) => {
    const name = context.req.param("name");
    await refuseBody(context, "DELETE /v1/skills/{name}");
    await skills.remove(actor(context), name);
    return context.body(null, 204);
  });

  app.get("/v1/skills/:name/files/*", async (context) => {
    const name = context.req.param("name");
    // The path after /files/, each component percent-decoded on its own.
    const raw = new URL(context.req.url).pathname.split("/").slice(5);
    let path: string;
    try {
      path = raw.map((part) => decodeURIComponent(part)).join("/");
    } catch {
      throw invalidRequest([
        { path: "path", message: "the file path is not valid percent-encoding" },
      ]);
    }
    const problem = skillPathProblem(path);
    if (problem !== undefined)
      throw invalidRequest([
        {
          path: "path",
          message: `${problem}; name a file as GET /v1/skills/{name} lists it (e.g. /v1/skills/${name}/files/SKILL.md)`,
        },
      ]);
    const file = await skills.readFile(context.get("account").id, name, path);
    return context.body(file.content as Uint8Array<ArrayBuffer>, 200, {
      "content-type": "application/octet-stream",
      "content-length": String(file.size),
      "content-disposition": attachmentDisposition(path.slice(path.lastIndexOf("/") + 1)),
      "cache-control": "private, no-store",
      "x-content-type-options": "nosniff",
    });
  });
}
