/**
 * Reconnect delays: jittered exponential backoff whose attempt counter resets only after a
 * connection stayed up for a minimum time. Resetting on every successful handshake would let a
 * gateway that accepts and then drops the worker (bad token rotation, a crash loop) be hammered
 * at the initial delay forever.
 */

                                 
                     
                          
                        
                      
                   
                  
                                                                                       
                       
                          
                     
                                                         
                        
 

                          
                                                                     
                    
                                                                                             
                        
                                              
                           
 

export function createBackoff(options                 = {})          {
  const initialDelayMs = options.initialDelayMs ?? 500;
  const maxDelayMs = options.maxDelayMs ?? 30_000;
  const factor = options.factor ?? 2;
  const minUptimeMs = options.minUptimeMs ?? 10_000;
  const now = options.now ?? Date.now;
  const random = options.random ?? Math.random;

  let attempt = 0;
  let connectedAt                    ;

  return {
    get attempt() {
      return attempt;
    },
    connected() {
      connectedAt = now();
    },
    nextDelayMs() {
      if (connectedAt !== undefined && now() - connectedAt >= minUptimeMs) attempt = 0;
      connectedAt = undefined;
      const ceiling = Math.min(maxDelayMs, initialDelayMs * factor ** attempt);
      attempt += 1;
      // "Equal jitter": at least half the ceiling, so a crowd of workers spreads out but none
      // retries immediately.
      return Math.round(ceiling / 2 + random() * (ceiling / 2));
    },
  };
}
