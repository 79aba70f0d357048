/**
 * A small S3-compatible server for tests: node:http on 127.0.0.1, path-style addressing
 * (`/<bucket>/<key>`), objects in memory. Speaks what an S3 client needs for blobs: PUT, GET,
 * HEAD and DELETE of objects, ListObjectsV2 (with prefix, delimiter, max-keys and continuation
 * tokens), multipart uploads (initiate, upload part, complete, abort), create/head/delete bucket.
 *
 * Every request must carry a well-formed SigV4 `Authorization` header and `x-amz-date`; the
 * signature itself is not verified, but the access key id is when one is configured. Faults can
 * be injected (`failNext`) so tests can cover a client's retries. Not for production: no
 * persistence, no auth beyond the shape, no conditional requests, no ranges, no versioning.
 */
import { createHash, randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface FakeS3ServerOptions {
  /** Buckets that exist from the start. @default ["roost"] */
  buckets?: string[];
  /** When set, requests signed with another access key id are refused (403 InvalidAccessKeyId). */
  accessKeyId?: string;
  /** Page size cap of ListObjectsV2, to exercise clients' pagination. @default 1000 */
  maxKeys?: number;
  /** Smallest part but the last one of a multipart upload (real S3: 5 MiB). @default 5242880 */
  minPartSize?: number;
}

export interface FakeS3Object {
  body: Buffer;
  etag: string;
  modifiedAt: Date;
}

export interface FakeS3Request {
  method: string;
  bucket: string;
  key: string;
  query: string;
}

export interface FakeS3Server {
  /** e.g. http://127.0.0.1:41234, for the client's `endpoint` (with `forcePathStyle`). */
  readonly endpoint: string;
  /** The objects of a bucket, by key (live view, for assertions and for corrupting data). */
  objects(bucket: string): Map<string, FakeS3Object>;
  /** Requests served so far, in order. */
  readonly requests: FakeS3Request[];
  /** The next `count` requests (optionally only of `method`) fail with `status`. */
  failNext(count: number, options?: { status?: number; code?: string; method?: string }): void;
  close(): Promise<void>;
}

interface MultipartUpload {
  bucket: string;
  key: string;
  parts: Map<number, { body: Buffer; etag: string }>;
}

// AWS4-HMAC-SHA256 Credential=AKID/20250101/us-east-1/s3/aws4_request, SignedHeaders=host;x-amz-date, Signature=<64 hex>
const authorizationPattern =
  /^AWS4-HMAC-SHA256 Credential=([^/\s]+)\/(\d{8})\/([a-z0-9-]+)\/s3\/aws4_request, ?SignedHeaders=([a-z0-9;-]+), ?Signature=([0-9a-f]{64})$/;

function xmlEscape(text: string): string {
  return text.replace(/[<>&'"]/g, (char) => `&#${char.charCodeAt(0)};`);
}

function md5(data: Buffer | string): string {
  return createHash("md5").update(data).digest("hex");
}

async function readBody(request: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** Start a fake S3 server on 127.0.0.1 and an ephemeral port. */
export async function createFakeS3Server(options: FakeS3ServerOptions = {}): Promise<FakeS3Server> {
  const buckets = new Map<string, Map<string, FakeS3Object>>();
  for (const name of options.buckets ?? ["roost"]) buckets.set(name, new Map());
  const uploads = new Map<string, MultipartUpload>();
  const requests: FakeS3Request[] = [];
  const faults: { status: number; code: string; method: string | undefined }[] = [];
  const pageCap = options.maxKeys ?? 1000;
  const minPartSize = options.minPartSize ?? 5 * 1024 * 1024;

  function send(
    response: ServerResponse,
    status: number,
    xml?: string,
    headers: Record<string, string> = {},
  ) {
    response.writeHead(status, {
      "x-amz-request-id": randomUUID(),
      ...(xml === undefined ? {} : { "content-type": "application/xml" }),
      ...headers,
    });
    response.end(xml === undefined ? undefined : `<?xml version="1.0" encoding="UTF-8"?>\n${xml}`);
  }

  function sendError(
    response: ServerResponse,
    method: string,
    status: number,
    code: string,
    message: string,
    resource = "",
  ) {
    if (method === "HEAD") return send(response, status); // HEAD responses have no body
    send(
      response,
      status,
      `<Error><Code>${code}</Code><Message>${xmlEscape(message)}</Message><Resource>${xmlEscape(resource)}</Resource><RequestId>${randomUUID()}</RequestId></Error>`,
    );
  }

  function checkAuthorization(
    request: IncomingMessage,
  ): { code: string; message: string } | undefined {
    const header = request.headers.authorization;
    if (header === undefined)
      return {
        code: "AccessDenied",
        message: "missing Authorization header (requests must be SigV4-signed)",
      };
    const match = authorizationPattern.exec(header);
    if (!match)
      return {
        code: "AuthorizationHeaderMalformed",
        message: `malformed SigV4 Authorization header: ${header}`,
      };
    const signedHeaders = (match[4] ?? "").split(";");
    if (!signedHeaders.includes("host"))
      return { code: "AuthorizationHeaderMalformed", message: "SignedHeaders must include host" };
    if (!/^\d{8}T\d{6}Z$/.test(String(request.headers["x-amz-date"] ?? ""))) {
      return { code: "AccessDenied", message: "missing or malformed x-amz-date header" };
    }
    if (request.headers["x-amz-content-sha256"] === undefined) {
      return { code: "InvalidRequest", message: "missing x-amz-content-sha256 header" };
    }
    if (options.accessKeyId !== undefined && match[1] !== options.accessKeyId) {
      return {
        code: "InvalidAccessKeyId",
        message: "The AWS Access Key Id you provided does not exist in our records.",
      };
    }
    return undefined;
  }

  function objectHeaders(object: FakeS3Object): Record<string, string> {
    return {
      etag: `"${object.etag}"`,
      "last-modified": object.modifiedAt.toUTCString(),
      "content-length": String(object.body.length),
      "content-type": "application/octet-stream",
    };
  }

  function listObjects(
    response: ServerResponse,
    bucketName: string,
    bucket: Map<string, FakeS3Object>,
    query: URLSearchParams,
  ) {
    const prefix = query.get("prefix") ?? "";
    const delimiter = query.get("delimiter") ?? "";
    const maxKeys = Math.min(pageCap, Number(query.get("max-keys") ?? 1000));
    const token = query.get("continuation-token");
    const after = token
      ? Buffer.from(token, "base64url").toString()
      : (query.get("start-after") ?? "");
    const encode = query.get("encoding-type") === "url" ? encodeURIComponent : (key: string) => key;
    const keys = [...bucket.keys()].filter((key) => key.startsWith(prefix) && key > after).sort();
    const contents: string[] = [];
    const commonPrefixes = new Set<string>();
    let last = "";
    let truncated = false;
    for (const key of keys) {
      if (contents.length + commonPrefixes.size >= maxKeys) {
        truncated = true;
        break;
      }
      const cut = delimiter === "" ? -1 : key.indexOf(delimiter, prefix.length);
      if (cut >= 0) {
        commonPrefixes.add(key.slice(0, cut + delimiter.length));
      } else {
        const object = bucket.get(key)!;
        contents.push(
          `<Contents><Key>${xmlEscape(encode(key))}</Key><LastModified>${object.modifiedAt.toISOString()}</LastModified><ETag>"${object.etag}"</ETag><Size>${object.body.length}</Size><StorageClass>STANDARD</StorageClass></Contents>`,
        );
      }
      last = key;
    }
    const prefixes = [...commonPrefixes].map(
      (p) => `<CommonPrefixes><Prefix>${xmlEscape(encode(p))}</Prefix></CommonPrefixes>`,
    );
    send(
      response,
      200,
      `<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>${xmlEscape(bucketName)}</Name><Prefix>${xmlEscape(encode(prefix))}</Prefix><KeyCount>${contents.length + prefixes.length}</KeyCount><MaxKeys>${maxKeys}</MaxKeys>${delimiter ? `<Delimiter>${xmlEscape(delimiter)}</Delimiter>` : ""}<IsTruncated>${truncated}</IsTruncated>${token ? `<ContinuationToken>${xmlEscape(token)}</ContinuationToken>` : ""}${truncated ? `<NextContinuationToken>${Buffer.from(last).toString("base64url")}</NextContinuationToken>` : ""}${query.get("encoding-type") === "url" ? "<EncodingType>url</EncodingType>" : ""}${contents.join("")}${prefixes.join("")}</ListBucketResult>`,
    );
  }

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const method = request.method ?? "GET";
    const url = new URL(request.url ?? "/", "http://fake-s3");
    const [rawBucket = "", ...rawKey] = url.pathname.slice(1).split("/");
    const bucketName = decodeURIComponent(rawBucket);
    const key = rawKey.map((segment) => decodeURIComponent(segment)).join("/");
    const query = url.searchParams;
    requests.push({ method, bucket: bucketName, key, query: url.search });

    const auth = checkAuthorization(request);
    if (auth) {
      await readBody(request);
      return sendError(response, method, 403, auth.code, auth.message, url.pathname);
    }
    const faultIndex = faults.findIndex(
      (fault) => fault.method === undefined || fault.method === method,
    );
    if (faultIndex >= 0) {
      const [fault] = faults.splice(faultIndex, 1);
      await readBody(request);
      return sendError(
        response,
        method,
        fault!.status,
        fault!.code,
        "injected fault",
        url.pathname,
      );
    }
    if (String(request.headers["content-encoding"] ?? "").includes("aws-chunked")) {
      await readBody(request);
      return sendError(
        response,
        method,
        501,
        "NotImplemented",
        "aws-chunked bodies are not supported by this fake (set requestChecksumCalculation: WHEN_REQUIRED)",
      );
    }
    if (bucketName === "")
      return sendError(response, method, 501, "NotImplemented", "ListBuckets is not supported");

    const bucket = buckets.get(bucketName);
    if (key === "") {
      if (method === "PUT") {
        await readBody(request);
        if (!buckets.has(bucketName)) buckets.set(bucketName, new Map());
        return send(response, 200, undefined, { location: `/${bucketName}` });
      }
      if (!bucket)
        return sendError(
          response,
          method,
          404,
          "NoSuchBucket",
          "The specified bucket does not exist",
          url.pathname,
        );
      if (method === "HEAD") return send(response, 200);
      if (method === "GET" && query.get("list-type") === "2")
        return listObjects(response, bucketName, bucket, query);
      if (method === "DELETE") {
        if (bucket.size > 0)
          return sendError(
            response,
            method,
            409,
            "BucketNotEmpty",
            "The bucket you tried to delete is not empty",
          );
        buckets.delete(bucketName);
        return send(response, 204);
      }
      return sendError(
        response,
        method,
        501,
        "NotImplemented",
        `${method} ${url.search} on a bucket is not supported`,
      );
    }
    if (!bucket) {
      await readBody(request);
      return sendError(
        response,
        method,
        404,
        "NoSuchBucket",
        "The specified bucket does not exist",
        url.pathname,
      );
    }

    const uploadId = query.get("uploadId");
    switch (method) {
      case "PUT": {
        if (request.headers["x-amz-copy-source"] !== undefined) {
          await readBody(request);
          return sendError(response, method, 501, "NotImplemented", "CopyObject is not supported");
        }
        const body = await readBody(request);
        const declared = request.headers["content-length"];
        if (declared !== undefined && Number(declared) !== body.length) {
          return sendError(
            response,
            method,
            400,
            "IncompleteBody",
            "body shorter than Content-Length",
          );
        }
        if (uploadId !== null) {
          const upload = uploads.get(uploadId);
          if (!upload)
            return sendError(
              response,
              method,
              404,
              "NoSuchUpload",
              "The specified upload does not exist",
              url.pathname,
            );
          const partNumber = Number(query.get("partNumber"));
          if (!Number.isInteger(partNumber) || partNumber < 1 || partNumber > 10000) {
            return sendError(
              response,
              method,
              400,
              "InvalidArgument",
              "partNumber must be an integer from 1 to 10000",
            );
          }
          const etag = md5(body);
          upload.parts.set(partNumber, { body, etag });
          return send(response, 200, undefined, { etag: `"${etag}"` });
        }
        const object = { body, etag: md5(body), modifiedAt: new Date() };
        bucket.set(key, object);
        return send(response, 200, undefined, { etag: `"${object.etag}"` });
      }
      case "POST": {
        const body = await readBody(request);
        if (query.has("uploads")) {
          const id = randomUUID();
          uploads.set(id, { bucket: bucketName, key, parts: new Map() });
          return send(
            response,
            200,
            `<InitiateMultipartUploadResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Bucket>${xmlEscape(bucketName)}</Bucket><Key>${xmlEscape(key)}</Key><UploadId>${id}</UploadId></InitiateMultipartUploadResult>`,
          );
        }
        if (uploadId !== null) {
          const upload = uploads.get(uploadId);
          if (!upload || upload.bucket !== bucketName || upload.key !== key) {
            return sendError(
              response,
              method,
              404,
              "NoSuchUpload",
              "The specified upload does not exist",
              url.pathname,
            );
          }
          const listed = [...body.toString().matchAll(/<Part>([\s\S]*?)<\/Part>/g)].map(
            (match) => ({
              partNumber: Number(/<PartNumber>(\d+)<\/PartNumber>/.exec(match[1] ?? "")?.[1]),
              etag: /<ETag>(?:"|&quot;|&#34;)?([0-9a-f]+)(?:"|&quot;|&#34;)?<\/ETag>/.exec(
                match[1] ?? "",
              )?.[1],
            }),
          );
          if (listed.length === 0)
            return sendError(response, method, 400, "MalformedXML", "no parts listed");
          const chunks: Buffer[] = [];
          for (const [index, part] of listed.entries()) {
            const stored = upload.parts.get(part.partNumber);
            if (!stored || stored.etag !== part.etag)
              return sendError(
                response,
                method,
                400,
                "InvalidPart",
                `part ${part.partNumber} was not uploaded or its ETag differs`,
              );
            if (index > 0 && part.partNumber <= listed[index - 1]!.partNumber)
              return sendError(
                response,
                method,
                400,
                "InvalidPartOrder",
                "parts must be listed in ascending order",
              );
            if (index < listed.length - 1 && stored.body.length < minPartSize)
              return sendError(
                response,
                method,
                400,
                "EntityTooSmall",
                `part ${part.partNumber} is smaller than ${minPartSize} bytes`,
              );
            chunks.push(stored.body);
          }
          uploads.delete(uploadId);
          const etag = `${md5(Buffer.concat(listed.map((part) => Buffer.from(part.etag ?? "", "hex"))))}-${listed.length}`;
          bucket.set(key, { body: Buffer.concat(chunks), etag, modifiedAt: new Date() });
          return send(
            response,
            200,
            `<CompleteMultipartUploadResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Location>/${xmlEscape(bucketName)}/${xmlEscape(key)}</Location><Bucket>${xmlEscape(bucketName)}</Bucket><Key>${xmlEscape(key)}</Key><ETag>"${etag}"</ETag></CompleteMultipartUploadResult>`,
          );
        }
        return sendError(
          response,
          method,
          501,
          "NotImplemented",
          `POST ${url.search} is not supported`,
        );
      }
      case "DELETE": {
        await readBody(request);
        if (uploadId !== null) {
          if (!uploads.delete(uploadId))
            return sendError(
              response,
              method,
              404,
              "NoSuchUpload",
              "The specified upload does not exist",
              url.pathname,
            );
          return send(response, 204);
        }
        bucket.delete(key);
        return send(response, 204);
      }
      case "GET":
      case "HEAD": {
        await readBody(request);
        const object = bucket.get(key);
        if (!object)
          return sendError(
            response,
            method,
            404,
            "NoSuchKey",
            "The specified key does not exist.",
            url.pathname,
          );
        response.writeHead(200, { "x-amz-request-id": randomUUID(), ...objectHeaders(object) });
        response.end(method === "GET" ? object.body : undefined);
        return;
      }
      default:
        await readBody(request);
        return sendError(response, method, 405, "MethodNotAllowed", `${method} is not allowed`);
    }
  }

  const server = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      if (!response.headersSent)
        sendError(response, request.method ?? "GET", 500, "InternalError", String(error));
      else response.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const { port } = server.address() as AddressInfo;

  return {
    endpoint: `http://127.0.0.1:${port}`,
    requests,
    objects(bucket) {
      const objects = buckets.get(bucket);
      if (!objects) throw new Error(`fake S3: no bucket ${bucket}`);
      return objects;
    },
    failNext(count, fault = {}) {
      for (let i = 0; i < count; i++) {
        faults.push({
          status: fault.status ?? 500,
          code: fault.code ?? "InternalError",
          method: fault.method,
        });
      }
    },
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
    },
  };
}
