/**
 * The done-log: what the worker knows about each call id, on the computer's durable disk.
 *
 *   <stateDir>/calls/started/<key>.json   written (fsync'd) before a call with side effects starts
 *   <stateDir>/calls/done/<key>.json      written (fsync'd) when a call finishes, before its result is sent
 *
 * `<key>` is the SHA-256 of the call id, so any id is a safe file name. Both files are replaced
 * atomically (temporary file, fsync, rename, fsync of the directory), so a reader sees a whole
 * record or none. A `started` record without a `done` record after a restart means the previous
 * worker process died during the call; the call runner decides per tool what that means.
 */
import { createHash } from "node:crypto";
import { promises as fs } from "node:fs";
import path from "node:path";
                                                      
import { isErrno, writeFileAtomic } from "./fs-atomic.js";

                                                                                          

                                
                   
                 
               
                    
                                                                        
                   
 

                             
                
                 
               
                     
                       
 

                                                    

                                 
                                                                                              
                  
                                  
                   
 

                          
                                                                                  
                                                       
                                                                             
                                                                              
                                                                    
                                             
                                                                      
                                           
 

export function callKey(callId        )         {
  return createHash("sha256").update(callId).digest("hex");
}

export async function openDoneLog(
  stateDir        ,
  options                 = {},
)                   {
  const startedDir = path.join(stateDir, "calls", "started");
  const doneDir = path.join(stateDir, "calls", "done");
  await fs.mkdir(startedDir, { recursive: true });
  await fs.mkdir(doneDir, { recursive: true });
  const durable = options.fsync ?? true;
  const now = options.now ?? (() => new Date());

  const write = (dir        , callId        , record            ) =>
    writeFileAtomic(path.join(dir, `${callKey(callId)}.json`), JSON.stringify(record), durable);

  return {
    async get(callId) {
      const key = `${callKey(callId)}.json`;
      const done = await readRecord(path.join(doneDir, key));
      if (done !== undefined) return done;
      return readRecord(path.join(startedDir, key));
    },
    async markStarted(callId, tool, detail) {
      const record                = {
        state: "started",
        callId,
        tool,
        startedAt: now().toISOString(),
      };
      if (detail !== undefined) record.detail = detail;
      await write(startedDir, callId, record);
    },
    async markDone(callId, tool, outcome) {
      await write(doneDir, callId, {
        state: "done",
        callId,
        tool,
        finishedAt: now().toISOString(),
        outcome,
      });
      // The done record wins over the started one; removing it only keeps the startup scan short.
      await fs.rm(path.join(startedDir, `${callKey(callId)}.json`), { force: true });
    },
    async listUnfinished() {
      const names = await fs.readdir(startedDir);
      const records                  = [];
      for (const name of names) {
        if (!name.endsWith(".json")) continue;
        const record = await readRecord(path.join(startedDir, name));
        if (record?.state !== "started") continue;
        if ((await readRecord(path.join(doneDir, name))) !== undefined) {
          await fs.rm(path.join(startedDir, name), { force: true });
          continue;
        }
        records.push(record);
      }
      return records;
    },
    async prune(maxAgeMs) {
      const cutoff = now().getTime() - maxAgeMs;
      let removed = 0;
      for (const name of await fs.readdir(doneDir)) {
        const file = path.join(doneDir, name);
        const stat = await fs.stat(file).catch(() => undefined);
        if (stat !== undefined && stat.mtimeMs < cutoff) {
          await fs.rm(file, { force: true });
          removed += 1;
        }
      }
      return removed;
    },
  };
}

async function readRecord(file        )                                  {
  let text        ;
  try {
    text = await fs.readFile(file, "utf8");
  } catch (error) {
    if (isErrno(error, "ENOENT")) return undefined;
    throw error;
  }
  try {
    const value = JSON.parse(text)              ;
    return value.state === "started" || value.state === "done" ? value : undefined;
  } catch {
    return undefined; // only possible after a torn write without fsync; treat as absent
  }
}
