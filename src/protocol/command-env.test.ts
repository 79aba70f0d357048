import { describe, expect, it } from "vitest";
import { CommandEnvError, commandEnvVariable, commandOnlyEnv } from "./command-env.ts";

describe("command-only variables", () => {
  it("reads the JSON object, and nothing when the variable is absent or empty", () => {
    expect(commandOnlyEnv({})).toEqual({});
    expect(commandOnlyEnv({ [commandEnvVariable]: "" })).toEqual({});
    expect(
      commandOnlyEnv({ [commandEnvVariable]: '{"NODE_USE_ENV_PROXY":"1","A":"b c"}' }),
    ).toEqual({ NODE_USE_ENV_PROXY: "1", A: "b c" });
  });

  it("never passes a ROOST_ variable to commands, and refuses what is not an object of strings", () => {
    expect(commandOnlyEnv({ [commandEnvVariable]: '{"ROOST_WORKER_TOKEN":"x","OK":"1"}' })).toEqual(
      { OK: "1" },
    );
    for (const bad of ["[1]", "null", "3", "{", '{"A":1}', '{"A=B":"1"}', '{"":"1"}'])
      expect(() => commandOnlyEnv({ [commandEnvVariable]: bad })).toThrow(CommandEnvError);
  });
});
