/** What every tool receives, and the one error type tools throw. */
import os from "node:os";
import path from "node:path";
                                                                     
                                                   

                              
                 
                                                          
                    
                                                           
                   
                                                                        
                                               
                                                                                  
                   
                                                   
                      
                                                                                 
                                                        
     
                                                                                             
                                                                                              
     
                                               
     
                                                                                                
                                                                                        
     
                                                    
                                                                                           
                                      
                             
                   
                
 

/** A tool's failure, returned to the model as `{ok: false, error: {code, message}}`. */
export class ToolFailure extends Error {
                    name = "ToolFailure";
           code               ;
  constructor(code               , message        ) {
    super(message);
    this.code = code;
  }
}

/** Maps anything a tool threw to the error in its result. */
export function toToolError(error         , subject         )            {
  const failure = toToolFailure(error, subject);
  return { code: failure.code, message: failure.message };
}

/** Turns a thrown value (usually a Node file-system error) into a ToolFailure with a helpful message. */
export function toToolFailure(error         , subject         )              {
  if (error instanceof ToolFailure) return error;
  const code =
    typeof error === "object" && error !== null && "code" in error ? String(error.code) : undefined;
  const what =
    subject ??
    (typeof error === "object" && error !== null && "path" in error ? String(error.path) : "path");
  switch (code) {
    case "ENOENT":
      return new ToolFailure(
        "not_found",
        `${what} does not exist (check the path; list the parent directory to see what is there)`,
      );
    case "EACCES":
    case "EPERM":
      return new ToolFailure("permission_denied", `permission denied for ${what}`);
    case "EISDIR":
      return new ToolFailure(
        "is_directory",
        `${what} is a directory (use list to see its entries)`,
      );
    case "ENOTDIR":
      return new ToolFailure("not_a_directory", `a component of ${what} is not a directory`);
    default:
      return new ToolFailure(
        code === undefined ? "internal" : "io_error",
        error instanceof Error ? error.message : String(error),
      );
  }
}

/** Resolves a tool path: `~` and `~/x` against the home directory, relative paths against the workspace. */
export function resolveToolPath(workspace        , input        )         {
  if (input === "~") return os.homedir();
  if (input.startsWith("~/")) return path.join(os.homedir(), input.slice(2));
  return path.resolve(workspace, input);
}
