/**
 * Schema migrations, shared by SQLite and Postgres: plain SQL both accept (TEXT, BIGINT,
 * INTEGER, UNIQUE, REFERENCES). Append new migrations; never edit a released one.
 */
export interface Migration {
  version: number;
  /** SQL both databases accept. */
  statements: readonly string[];
  /** Run after `statements`, on SQLite only (e.g. FTS5 tables). */
  sqlite?: readonly string[];
  /** Run after `statements`, on Postgres only (e.g. tsvector columns). */
  postgres?: readonly string[];
}

export const migrations: readonly Migration[] = [
  {
    version: 1,
    statements: [
      `CREATE TABLE accounts (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        is_admin INTEGER NOT NULL DEFAULT 0,
        created_at BIGINT NOT NULL)`,
      `CREATE TABLE api_tokens (
        id TEXT PRIMARY KEY,
        account_id TEXT NOT NULL REFERENCES accounts(id),
        name TEXT NOT NULL,
        token_hash TEXT NOT NULL UNIQUE,
        created_at BIGINT NOT NULL)`,
      `CREATE TABLE bots (
        id TEXT PRIMARY KEY,
        account_id TEXT NOT NULL REFERENCES accounts(id),
        name TEXT NOT NULL,
        instructions TEXT NOT NULL,
        model TEXT,
        created_at BIGINT NOT NULL,
        updated_at BIGINT NOT NULL,
        UNIQUE (account_id, name))`,
      `CREATE TABLE conversations (
        id TEXT PRIMARY KEY,
        account_id TEXT NOT NULL REFERENCES accounts(id),
        bot_id TEXT NOT NULL REFERENCES bots(id),
        title TEXT NOT NULL,
        last_seq BIGINT NOT NULL DEFAULT 0,
        created_at BIGINT NOT NULL,
        updated_at BIGINT NOT NULL)`,
      `CREATE INDEX conversations_by_account ON conversations (account_id, updated_at)`,
      `CREATE TABLE messages (
        id TEXT PRIMARY KEY,
        conversation_id TEXT NOT NULL REFERENCES conversations(id),
        client_message_id TEXT NOT NULL,
        author_account_id TEXT NOT NULL,
        text TEXT NOT NULL,
        seq BIGINT NOT NULL,
        taken_by TEXT,
        created_at BIGINT NOT NULL,
        UNIQUE (conversation_id, client_message_id))`,
      `CREATE INDEX messages_by_take ON messages (conversation_id, taken_by)`,
      `CREATE TABLE steps (
        conversation_id TEXT NOT NULL REFERENCES conversations(id),
        seq BIGINT NOT NULL,
        id TEXT NOT NULL UNIQUE,
        turn_id TEXT,
        kind TEXT NOT NULL,
        payload TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        PRIMARY KEY (conversation_id, seq))`,
      `CREATE TABLE audit_log (
        id TEXT PRIMARY KEY,
        account_id TEXT,
        action TEXT NOT NULL,
        target TEXT NOT NULL,
        detail TEXT NOT NULL,
        created_at BIGINT NOT NULL)`,
      `CREATE INDEX audit_by_account ON audit_log (account_id, created_at)`,
    ],
  },
  {
    version: 2,
    statements: [
      // The id of the durable promise a conversation's loop waits on for follow-ups (see takeInbox).
      `ALTER TABLE conversations ADD COLUMN waiter TEXT`,
    ],
  },
  {
    version: 3,
    statements: [
      // One computer per account (ARCHITECTURE.md §7); its lifecycle state lives in the control plane.
      `CREATE TABLE computers (
        id TEXT PRIMARY KEY,
        account_id TEXT NOT NULL UNIQUE REFERENCES accounts(id),
        provider TEXT NOT NULL,
        created_at BIGINT NOT NULL)`,
      // At most one live worker token per computer, stored hashed; replaced on every wake.
      `CREATE TABLE worker_tokens (
        computer_id TEXT PRIMARY KEY REFERENCES computers(id),
        token_hash TEXT NOT NULL UNIQUE,
        expires_at BIGINT NOT NULL)`,
    ],
  },
  {
    version: 4,
    statements: [
      // The computer's egress policy as JSON (docs/egress.md); null means the platform default.
      `ALTER TABLE computers ADD COLUMN network_policy TEXT`,
    ],
  },
  {
    version: 5,
    statements: [
      // The sweep and every take look for messages no loop has taken: keep that set indexed on
      // its own (it is small; taken messages leave it).
      `CREATE INDEX messages_waiting ON messages (conversation_id, seq) WHERE taken_by IS NULL`,
    ],
  },
  {
    version: 6,
    statements: [
      // How far the conversation had got (its last_seq) when a loop took the message, so the
      // model's history places it after whatever was written meanwhile (loop/context.ts HIS1).
      `ALTER TABLE messages ADD COLUMN taken_at_seq BIGINT`,
    ],
  },
  {
    version: 7,
    statements: [
      // When a token last authenticated a request (GET /v1/tokens); written at most about once a
      // minute per token, not on every request.
      `ALTER TABLE api_tokens ADD COLUMN last_used_at BIGINT`,
      `CREATE INDEX api_tokens_by_account ON api_tokens (account_id)`,
      // Deleting a bot finds its conversations by bot (STORE7).
      `CREATE INDEX conversations_by_bot ON conversations (bot_id)`,
    ],
  },
  {
    version: 8,
    statements: [
      // What bots remember (memory-types.ts): facts in tiers; bot_id NULL = the account's user facts.
      `CREATE TABLE memory_facts (
        id TEXT PRIMARY KEY,
        account_id TEXT NOT NULL REFERENCES accounts(id),
        bot_id TEXT REFERENCES bots(id),
        tier TEXT NOT NULL,
        text TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        updated_at BIGINT NOT NULL,
        expires_at BIGINT,
        removed_at BIGINT)`,
      `CREATE INDEX memory_facts_by_owner ON memory_facts (account_id, bot_id, tier, created_at)`,
      // Every change to a fact, reviewable and revertable; change_key makes a retried change a no-op.
      `CREATE TABLE memory_revisions (
        id TEXT PRIMARY KEY,
        account_id TEXT NOT NULL REFERENCES accounts(id),
        bot_id TEXT REFERENCES bots(id),
        fact_id TEXT NOT NULL,
        tier TEXT NOT NULL,
        action TEXT NOT NULL,
        author TEXT NOT NULL,
        conversation_id TEXT,
        turn_id TEXT,
        before_text TEXT,
        after_text TEXT,
        status TEXT NOT NULL,
        revert_of TEXT,
        change_key TEXT UNIQUE,
        created_at BIGINT NOT NULL)`,
      `CREATE INDEX memory_revisions_by_owner ON memory_revisions (account_id, bot_id, created_at)`,
    ],
    // Full-text search over log entries.
    sqlite: [`CREATE VIRTUAL TABLE memory_log_search USING fts5(fact_id UNINDEXED, text)`],
    postgres: [
      `ALTER TABLE memory_facts ADD COLUMN search tsvector GENERATED ALWAYS AS (to_tsvector('simple', text)) STORED`,
      `CREATE INDEX memory_facts_search ON memory_facts USING GIN (search)`,
    ],
  },
  {
    version: 9,
    statements: [
      // A bot's settings as JSON (types.ts BotSettings): memory review, skills; later ones too.
      `ALTER TABLE bots ADD COLUMN settings TEXT NOT NULL DEFAULT '{}'`,
    ],
  },
  {
    version: 10,
    statements: [
      // The loop finds a conversation's latest compaction summary without reading all its steps.
      `CREATE INDEX steps_by_kind ON steps (conversation_id, kind, seq)`,
    ],
  },
  {
    version: 11,
    statements: [
      // Which kind of computer the account uses: `hosted` (Roost runs it with its provider) or
      // `self-hosted` (the user's own machine running `roost worker`). Switching keeps the row,
      // so the hosted computer's disk and id stay for the way back (STORE9).
      `ALTER TABLE computers ADD COLUMN kind TEXT NOT NULL DEFAULT 'hosted'`,
      // The self-hosted machine's worker token, stored hashed; long-lived (no expiry): replaced
      // by a new registration, deleted when the computer goes back to hosted (STORE9).
      `CREATE TABLE self_hosted_tokens (
        computer_id TEXT PRIMARY KEY REFERENCES computers(id),
        token_hash TEXT NOT NULL UNIQUE,
        created_at BIGINT NOT NULL)`,
    ],
  },
  {
    version: 12,
    statements: [
      // Where a message came from (a routine, a webhook, another bot) as JSON; NULL for a chat.
      `ALTER TABLE messages ADD COLUMN source TEXT`,
    ],
  },
  {
    version: 13,
    statements: [
      // An account's skill library (skill-types.ts); the files' bytes are in skill_files.
      `CREATE TABLE skills (
        id TEXT PRIMARY KEY,
        account_id TEXT NOT NULL REFERENCES accounts(id),
        name TEXT NOT NULL,
        description TEXT NOT NULL,
        body TEXT NOT NULL,
        digest TEXT NOT NULL,
        total_bytes BIGINT NOT NULL,
        file_count INTEGER NOT NULL,
        created_at BIGINT NOT NULL,
        updated_at BIGINT NOT NULL,
        UNIQUE (account_id, name))`,
    ],
    // A skill's files, bytes included: binary columns differ between the two.
    sqlite: [
      `CREATE TABLE skill_files (
        skill_id TEXT NOT NULL REFERENCES skills(id),
        path TEXT NOT NULL,
        mode INTEGER NOT NULL,
        size BIGINT NOT NULL,
        sha256 TEXT NOT NULL,
        content BLOB NOT NULL,
        PRIMARY KEY (skill_id, path))`,
    ],
    postgres: [
      `CREATE TABLE skill_files (
        skill_id TEXT NOT NULL REFERENCES skills(id),
        path TEXT NOT NULL,
        mode INTEGER NOT NULL,
        size BIGINT NOT NULL,
        sha256 TEXT NOT NULL,
        content BYTEA NOT NULL,
        PRIMARY KEY (skill_id, path))`,
    ],
  },
  {
    version: 14,
    statements: [
      // Routines (routine-types.ts): a bot's scheduled or webhook-started work. `trigger_type`
      // repeats the trigger's type for the scheduler's sweep; the trigger itself is JSON.
      `CREATE TABLE routines (
        id TEXT PRIMARY KEY,
        account_id TEXT NOT NULL REFERENCES accounts(id),
        bot_id TEXT NOT NULL REFERENCES bots(id),
        name TEXT NOT NULL,
        instruction TEXT NOT NULL,
        trigger_type TEXT NOT NULL,
        trigger_spec TEXT NOT NULL,
        target TEXT NOT NULL,
        enabled INTEGER NOT NULL,
        misfire TEXT NOT NULL,
        budget TEXT,
        triage_model TEXT,
        generation BIGINT NOT NULL,
        anchor_at BIGINT NOT NULL,
        webhook_key_hash TEXT UNIQUE,
        next_run_at BIGINT,
        armed_generation BIGINT NOT NULL DEFAULT 0,
        created_at BIGINT NOT NULL,
        updated_at BIGINT NOT NULL)`,
      `CREATE INDEX routines_by_bot ON routines (bot_id)`,
      `CREATE INDEX routines_unarmed ON routines (enabled, trigger_type, armed_generation, generation)`,
      // A routine's runs, the newest 20 kept (RST4); ids are deterministic per slot (RST3).
      `CREATE TABLE routine_runs (
        id TEXT PRIMARY KEY,
        routine_id TEXT NOT NULL REFERENCES routines(id),
        account_id TEXT NOT NULL,
        status TEXT NOT NULL,
        kind TEXT NOT NULL,
        scheduled_at BIGINT,
        started_at BIGINT,
        finished_at BIGINT,
        conversation_id TEXT,
        error TEXT,
        created_at BIGINT NOT NULL)`,
      `CREATE INDEX routine_runs_by_routine ON routine_runs (routine_id, created_at)`,
      // The account's timezone (routines without their own run in it; null = ROOST_TIMEZONE),
      // and when its scheduled routines were paused after the owner's absence.
      `ALTER TABLE accounts ADD COLUMN timezone TEXT`,
      `ALTER TABLE accounts ADD COLUMN routines_paused_at BIGINT`,
    ],
  },
  {
    version: 15,
    statements: [
      // Results (results-types.ts): drafts a bot made for the owner to send or discard.
      `CREATE TABLE drafts (
        id TEXT PRIMARY KEY,
        account_id TEXT NOT NULL REFERENCES accounts(id),
        bot_id TEXT NOT NULL,
        conversation_id TEXT NOT NULL,
        kind TEXT NOT NULL,
        recipient TEXT NOT NULL,
        subject TEXT,
        text TEXT NOT NULL,
        status TEXT NOT NULL,
        send_attempts INTEGER NOT NULL DEFAULT 0,
        channel TEXT,
        error TEXT,
        created_at BIGINT NOT NULL,
        updated_at BIGINT NOT NULL,
        sent_at BIGINT)`,
      `CREATE INDEX drafts_by_account ON drafts (account_id, created_at)`,
      `CREATE INDEX drafts_by_conversation ON drafts (conversation_id, status)`,
      // What the owner is told; the id is the caller's (idempotent, RES3).
      `CREATE TABLE notifications (
        account_id TEXT NOT NULL REFERENCES accounts(id),
        id TEXT NOT NULL,
        kind TEXT NOT NULL,
        title TEXT NOT NULL,
        body TEXT NOT NULL,
        bot_id TEXT,
        conversation_id TEXT,
        subject_id TEXT,
        created_at BIGINT NOT NULL,
        read_at BIGINT,
        PRIMARY KEY (account_id, id))`,
      `CREATE INDEX notifications_by_time ON notifications (account_id, created_at)`,
      `CREATE INDEX notifications_by_conversation ON notifications (conversation_id, read_at)`,
      // The owner's own endpoints Roost posts to: notifications, drafts to send.
      `CREATE TABLE owner_webhooks (
        account_id TEXT NOT NULL REFERENCES accounts(id),
        purpose TEXT NOT NULL,
        url TEXT NOT NULL,
        secret TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        updated_at BIGINT NOT NULL,
        PRIMARY KEY (account_id, purpose))`,
      // Bot to bot: the receiver's conversation for messages from one sender bot (RES1).
      `CREATE TABLE bot_threads (
        from_bot_id TEXT NOT NULL,
        to_bot_id TEXT NOT NULL,
        account_id TEXT NOT NULL REFERENCES accounts(id),
        conversation_id TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        PRIMARY KEY (from_bot_id, to_bot_id))`,
      // How far the owner has read each conversation (the sidebar's "Unread activity").
      `CREATE TABLE conversation_reads (
        conversation_id TEXT PRIMARY KEY,
        account_id TEXT NOT NULL REFERENCES accounts(id),
        seen_seq BIGINT NOT NULL,
        updated_at BIGINT NOT NULL)`,
    ],
  },
  {
    version: 16,
    statements: [
      // One row per model call that answered (usage-types.ts, USE1): idempotent by call id, so a
      // replayed afterModelCall step never counts a call twice. No foreign keys: usage outlives a
      // deleted bot or conversation (it is what was spent).
      `CREATE TABLE usage_records (
        id TEXT PRIMARY KEY,
        account_id TEXT NOT NULL,
        bot_id TEXT NOT NULL,
        conversation_id TEXT NOT NULL,
        turn_id TEXT NOT NULL,
        call_index INTEGER NOT NULL,
        trigger_kind TEXT NOT NULL,
        routine_id TEXT,
        run_id TEXT,
        person_id TEXT NOT NULL,
        model_spec TEXT NOT NULL,
        model TEXT NOT NULL,
        input_tokens BIGINT NOT NULL,
        output_tokens BIGINT NOT NULL,
        cached_tokens BIGINT,
        cost DOUBLE PRECISION,
        created_at BIGINT NOT NULL)`,
      `CREATE INDEX usage_by_account ON usage_records (account_id, created_at)`,
      `CREATE INDEX usage_by_bot ON usage_records (bot_id, created_at)`,
      `CREATE INDEX usage_by_routine ON usage_records (routine_id, created_at)`,
      `CREATE INDEX usage_by_run ON usage_records (run_id)`,
      // Sums per bot and per routine per UTC day and month, kept with each record in its
      // transaction (USE4): the budget check before every model call reads two rows, not a month
      // of records (bench/usage.ts).
      `CREATE TABLE usage_rollups (
        scope TEXT NOT NULL,
        scope_id TEXT NOT NULL,
        period TEXT NOT NULL,
        calls BIGINT NOT NULL,
        input_tokens BIGINT NOT NULL,
        output_tokens BIGINT NOT NULL,
        cached_tokens BIGINT NOT NULL,
        cost DOUBLE PRECISION NOT NULL,
        priced BIGINT NOT NULL,
        unpriced BIGINT NOT NULL,
        PRIMARY KEY (scope, scope_id, period))`,
      // A bot's spend cap (Api.Budget as JSON); no row = no cap.
      `CREATE TABLE bot_budgets (
        bot_id TEXT PRIMARY KEY,
        budget TEXT NOT NULL,
        updated_at BIGINT NOT NULL)`,
      // Turns parked at a reached budget: the durable promise (awakeable) that lets each go on.
      `CREATE TABLE budget_waits (
        id TEXT PRIMARY KEY,
        bot_id TEXT NOT NULL,
        routine_id TEXT,
        conversation_id TEXT NOT NULL,
        turn_id TEXT NOT NULL,
        created_at BIGINT NOT NULL)`,
      `CREATE INDEX budget_waits_by_bot ON budget_waits (bot_id)`,
      `CREATE INDEX budget_waits_by_routine ON budget_waits (routine_id)`,
      `CREATE INDEX budget_waits_by_conversation ON budget_waits (conversation_id)`,
    ],
  },
  {
    version: 17,
    statements: [],
    // MEM5: each word indexed with its bot in front (log-words.ts), so a search reads one bot's
    // entries; rebuilt in the facts' order, since a search takes each word's newest entries.
    sqlite: [
      `CREATE VIRTUAL TABLE memory_log_words USING fts5(fact_id UNINDEXED, words)`,
      `INSERT INTO memory_log_words (fact_id, words)
        SELECT s.fact_id, roost_log_words(f.bot_id, s.text) FROM memory_log_search s
        JOIN memory_facts f ON f.id = s.fact_id ORDER BY f.created_at, f.id`,
      `DROP TABLE memory_log_search`,
    ],
  },
  {
    version: 18,
    statements: [
      // A bot's tool policy (Api.ToolPolicy as JSON); no row = the defaults only (docs/approvals.md).
      `CREATE TABLE tool_policies (
        bot_id TEXT PRIMARY KEY,
        policy TEXT NOT NULL,
        updated_at BIGINT NOT NULL)`,
      // Calls waiting for (or settled by) a person (approval-types.ts APS1-APS3). No foreign keys:
      // the record of a decision outlives a deleted conversation, like the audit log.
      `CREATE TABLE approvals (
        id TEXT PRIMARY KEY,
        account_id TEXT NOT NULL,
        bot_id TEXT NOT NULL,
        conversation_id TEXT NOT NULL,
        turn_id TEXT NOT NULL,
        call_id TEXT NOT NULL,
        waiter_id TEXT NOT NULL,
        tool TEXT NOT NULL,
        input TEXT NOT NULL,
        reason TEXT NOT NULL,
        bot_reason TEXT,
        review TEXT,
        approvers TEXT NOT NULL,
        state TEXT NOT NULL,
        decided_by TEXT,
        decided_at BIGINT,
        remembered TEXT,
        released INTEGER NOT NULL DEFAULT 0,
        expires_at BIGINT NOT NULL,
        created_at BIGINT NOT NULL)`,
      `CREATE INDEX approvals_by_account ON approvals (account_id, state, created_at)`,
      `CREATE INDEX approvals_by_conversation ON approvals (conversation_id, state)`,
      `CREATE INDEX approvals_unreleased ON approvals (released, state)`,
    ],
  },
  {
    version: 19,
    statements: [
      // Secrets (secret-types.ts, SST1): sealed values only (src/secrets/crypto.ts); the owner is
      // a bot (scope 'bot') or an account (scope 'user', shared by all of its bots).
      `CREATE TABLE secrets (
        scope TEXT NOT NULL,
        owner_id TEXT NOT NULL,
        account_id TEXT NOT NULL,
        name TEXT NOT NULL,
        sealed TEXT NOT NULL,
        broker_hosts TEXT,
        created_at BIGINT NOT NULL,
        updated_at BIGINT NOT NULL,
        PRIMARY KEY (scope, owner_id, name))`,
      `CREATE INDEX secrets_by_account ON secrets (account_id)`,
    ],
  },
  {
    version: 20,
    statements: [
      // Control leases of the live view's screens (screen-lease-types.ts, SCL1-SCL3): one row per
      // screen at most; an expired row is as good as none, and the next take replaces it.
      `CREATE TABLE screen_leases (
        computer_id TEXT NOT NULL,
        screen_id TEXT NOT NULL,
        account_id TEXT NOT NULL,
        viewer_id TEXT NOT NULL,
        reason TEXT NOT NULL,
        started_at BIGINT NOT NULL,
        until_at BIGINT NOT NULL,
        PRIMARY KEY (computer_id, screen_id))`,
      // Handoffs a bot asked for (ask_user_to_take_over, SCL4): the parked call's waiter, until
      // the person hands the screen back or the wait times out.
      `CREATE TABLE screen_handoffs (
        id TEXT PRIMARY KEY,
        account_id TEXT NOT NULL,
        bot_id TEXT NOT NULL,
        conversation_id TEXT NOT NULL,
        computer_id TEXT NOT NULL,
        screen_id TEXT NOT NULL,
        waiter_id TEXT NOT NULL,
        reason TEXT NOT NULL,
        state TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        settled_at BIGINT)`,
      `CREATE INDEX screen_handoffs_pending ON screen_handoffs (computer_id, screen_id, state)`,
    ],
  },
  {
    version: 21,
    statements: [
      // Conversation attachments (attachment-types.ts, ATS1-ATS2): screenshots, images, downloads
      // and recordings of tool calls; the bytes are in the blob store under blob_key.
      `CREATE TABLE attachments (
        id TEXT PRIMARY KEY,
        account_id TEXT NOT NULL,
        conversation_id TEXT NOT NULL,
        turn_id TEXT NOT NULL,
        call_id TEXT NOT NULL,
        kind TEXT NOT NULL,
        name TEXT NOT NULL,
        mime_type TEXT NOT NULL,
        size BIGINT NOT NULL,
        blob_key TEXT NOT NULL,
        created_at BIGINT NOT NULL)`,
      `CREATE INDEX attachments_by_conversation ON attachments (conversation_id, created_at)`,
    ],
  },
  {
    version: 22,
    statements: [
      // One admin, however many nodes start on a fresh database (decision 0028): nodes that raced
      // before this migration may have made two; the older one stays admin.
      `UPDATE accounts SET is_admin = 0 WHERE is_admin = 1 AND id <> (
        SELECT id FROM (SELECT id FROM accounts WHERE is_admin = 1 ORDER BY created_at, id LIMIT 1) AS oldest)`,
      `CREATE UNIQUE INDEX accounts_one_admin ON accounts (is_admin) WHERE is_admin = 1`,
    ],
  },
  {
    version: 23,
    statements: [],
    postgres: [
      // Live events too large for one NOTIFY, read by the other nodes (events/postgres-relay.ts, R2).
      `CREATE TABLE relay_payloads (
        id TEXT PRIMARY KEY,
        payload TEXT NOT NULL,
        created_at BIGINT NOT NULL)`,
      `CREATE INDEX relay_payloads_by_age ON relay_payloads (created_at)`,
    ],
  },
  {
    version: 24,
    statements: [
      // Teams (team-types.ts, TEAM1-TEAM5; docs/teams.md).
      `CREATE TABLE teams (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        created_by TEXT NOT NULL,
        created_at BIGINT NOT NULL)`,
      `CREATE TABLE team_members (
        team_id TEXT NOT NULL REFERENCES teams(id),
        account_id TEXT NOT NULL REFERENCES accounts(id),
        role TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        PRIMARY KEY (team_id, account_id))`,
      `CREATE INDEX team_members_by_account ON team_members (account_id)`,
      // Only the token's SHA-256 hash is kept (TEAM4); a used or expired row stays as the record.
      `CREATE TABLE team_invitations (
        id TEXT PRIMARY KEY,
        team_id TEXT NOT NULL REFERENCES teams(id),
        token_hash TEXT NOT NULL UNIQUE,
        role TEXT NOT NULL,
        created_by TEXT NOT NULL,
        expires_at BIGINT NOT NULL,
        accepted_by TEXT,
        accepted_at BIGINT,
        created_at BIGINT NOT NULL)`,
      // A team bot: published by its owner to one team (null: the owner's alone).
      `ALTER TABLE bots ADD COLUMN team_id TEXT`,
      `CREATE INDEX bots_by_team ON bots (team_id)`,
      // Where the conversation happens: 'direct' (one person's chat) or 'shared' (a channel,
      // group DM or thread); it decides the computer and the credentials (docs/teams.md).
      `ALTER TABLE conversations ADD COLUMN place TEXT NOT NULL DEFAULT 'direct'`,
      // The account that owns a bot's shared computer (the computer of its shared places):
      // an account with no token, made on the first shared turn (TEAM6).
      // A person's consent to let a bot use one of their credentials in one shared place
      // (TEAM7; docs/teams.md "Consent"): kind 'secret' today, MCP servers and accounts later.
      `CREATE TABLE credential_consents (
        bot_id TEXT NOT NULL,
        place_id TEXT NOT NULL,
        owner_account_id TEXT NOT NULL,
        kind TEXT NOT NULL,
        name TEXT NOT NULL,
        granted_at BIGINT NOT NULL,
        PRIMARY KEY (bot_id, place_id, owner_account_id, kind, name))`,
      `CREATE INDEX credential_consents_by_owner ON credential_consents (owner_account_id)`,
      // Memory provenance: who a change was made for (the talking person; docs/teams.md).
      `ALTER TABLE memory_revisions ADD COLUMN by_account_id TEXT`,
      `CREATE TABLE bot_shared_accounts (
        bot_id TEXT PRIMARY KEY,
        account_id TEXT NOT NULL UNIQUE REFERENCES accounts(id),
        created_at BIGINT NOT NULL)`,
    ],
  },
  {
    version: 25,
    statements: [
      // MCP servers (mcp-types.ts, MST1): per bot (scope 'bot') or per account (scope 'user').
      // `sealed` holds env or header values and `oauth` an OAuth client's tokens, both sealed
      // (src/secrets/crypto.ts); the rest is no secret.
      `CREATE TABLE mcp_servers (
        scope TEXT NOT NULL,
        owner_id TEXT NOT NULL,
        account_id TEXT NOT NULL,
        name TEXT NOT NULL,
        transport TEXT NOT NULL,
        spec TEXT NOT NULL,
        sealed TEXT,
        secret_names TEXT NOT NULL,
        tools TEXT,
        listed_at BIGINT,
        last_error TEXT,
        last_error_at BIGINT,
        oauth TEXT,
        oauth_state TEXT,
        created_at BIGINT NOT NULL,
        updated_at BIGINT NOT NULL,
        PRIMARY KEY (scope, owner_id, name))`,
      `CREATE INDEX mcp_servers_by_account ON mcp_servers (account_id)`,
      // An OAuth flow's callback finds its server by the flow's random state (src/mcp/oauth.ts).
      `CREATE INDEX mcp_servers_by_oauth_state ON mcp_servers (oauth_state)`,
    ],
  },
  {
    version: 26,
    statements: [
      // Helpers (helper-types.ts, HST1–HST5): a helper's own conversation is an ordinary
      // conversation row; this row records its parent, task, tools, model and status.
      `CREATE TABLE helpers (
        id TEXT PRIMARY KEY,
        account_id TEXT NOT NULL,
        conversation_id TEXT NOT NULL UNIQUE,
        parent_conversation_id TEXT NOT NULL,
        bot_id TEXT NOT NULL,
        depth INTEGER NOT NULL,
        task TEXT NOT NULL,
        instructions TEXT,
        tools TEXT,
        model TEXT,
        status TEXT NOT NULL,
        latest_output TEXT,
        created_at BIGINT NOT NULL,
        updated_at BIGINT NOT NULL)`,
      `CREATE INDEX helpers_by_parent ON helpers (parent_conversation_id, status)`,
    ],
  },
  {
    version: 28,
    statements: [
      // Model providers configured from the web app (provider-types.ts, MPST1–MPST2): the key is
      // sealed (src/secrets/crypto.ts); the rest is no secret.
      `CREATE TABLE model_providers (
        id TEXT PRIMARY KEY,
        kind TEXT NOT NULL,
        label TEXT NOT NULL,
        base_url TEXT,
        sealed_key TEXT,
        key_hint TEXT,
        created_at BIGINT NOT NULL,
        updated_at BIGINT NOT NULL)`,
    ],
  },
  {
    version: 32,
    statements: [
      // A computer's home host (decision 0040): the one node that runs it and holds its disk.
      // NULL until its first wake; changed only by claimComputerHome (a conditional write).
      `ALTER TABLE computers ADD COLUMN home_host TEXT`,
    ],
  },
  {
    version: 31,
    statements: [
      // Where each computer's worker is connected: the holding node's internal URL (decision
      // 0039, worker-location-types.ts WL1–WL2). Calls made on other nodes are forwarded there.
      `CREATE TABLE worker_locations (
        computer_id TEXT PRIMARY KEY,
        node_url TEXT NOT NULL,
        worker_id TEXT NOT NULL,
        connected_at BIGINT NOT NULL)`,
      `CREATE INDEX worker_locations_by_node ON worker_locations (node_url)`,
    ],
  },
  {
    version: 30,
    statements: [
      // Uploads attached to a message (docs/uploads.md): JSON list of Api.MessageAttachment.
      `ALTER TABLE messages ADD COLUMN attachments TEXT`,
    ],
  },
  {
    version: 27,
    statements: [
      // Slack (slack-types.ts, SLST1–SLST4, docs/slack.md): a bot's link to a Slack app, its
      // token and signing secret sealed (src/secrets/crypto.ts); the rest is no secret.
      `CREATE TABLE slack_links (
        bot_id TEXT PRIMARY KEY,
        account_id TEXT NOT NULL,
        slack_team_id TEXT NOT NULL,
        slack_team_name TEXT NOT NULL,
        bot_user_id TEXT NOT NULL,
        api_url TEXT,
        sealed_token TEXT NOT NULL,
        sealed_secret TEXT NOT NULL,
        sealed_app_token TEXT,
        last_error TEXT,
        last_error_at BIGINT,
        retry_after_ms BIGINT,
        created_at BIGINT NOT NULL,
        updated_at BIGINT NOT NULL)`,
      // One conversation per thread, one per person's DM (SLST2).
      `CREATE TABLE slack_places (
        bot_id TEXT NOT NULL,
        place_key TEXT NOT NULL,
        conversation_id TEXT NOT NULL UNIQUE,
        channel TEXT NOT NULL,
        thread_ts TEXT,
        created_at BIGINT NOT NULL,
        PRIMARY KEY (bot_id, place_key))`,
      // A Slack person linked to a Roost account, per workspace (SLST3).
      `CREATE TABLE slack_people (
        slack_team_id TEXT NOT NULL,
        slack_user_id TEXT NOT NULL,
        account_id TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        PRIMARY KEY (slack_team_id, slack_user_id))`,
      `CREATE TABLE slack_link_tokens (
        token_hash TEXT PRIMARY KEY,
        bot_id TEXT NOT NULL,
        slack_team_id TEXT NOT NULL,
        slack_user_id TEXT NOT NULL,
        expires_at BIGINT NOT NULL,
        used_at BIGINT,
        account_id TEXT,
        code_hash TEXT,
        confirmed_at BIGINT,
        created_at BIGINT NOT NULL)`,
      // The "working…" message of a turn, updated as it goes and with its reply (SLST4).
      `CREATE TABLE slack_turns (
        turn_id TEXT PRIMARY KEY,
        conversation_id TEXT NOT NULL,
        working_ts TEXT,
        replied_at BIGINT,
        created_at BIGINT NOT NULL)`,
    ],
  },
  {
    version: 33,
    statements: [
      // Slack OAuth install (slack-types.ts SLST5, SLST6, docs/slack.md "Many workspaces"): the
      // app's client id and sealed client secret on the link, one sealed bot token per installed
      // workspace, and the single-use `state` of each install (kept as its hash).
      `ALTER TABLE slack_links ADD COLUMN client_id TEXT`,
      `ALTER TABLE slack_links ADD COLUMN sealed_client_secret TEXT`,
      `CREATE TABLE slack_installs (
        bot_id TEXT NOT NULL,
        slack_team_id TEXT NOT NULL,
        slack_team_name TEXT NOT NULL,
        bot_user_id TEXT NOT NULL,
        sealed_token TEXT NOT NULL,
        installed_by TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        updated_at BIGINT NOT NULL,
        PRIMARY KEY (bot_id, slack_team_id))`,
      `CREATE TABLE slack_oauth_states (
        state_hash TEXT PRIMARY KEY,
        bot_id TEXT NOT NULL,
        account_id TEXT NOT NULL,
        expires_at BIGINT NOT NULL,
        used_at BIGINT,
        created_at BIGINT NOT NULL)`,
      // Where a listener routine's run answers in Slack: the heard message's thread (SLST7).
      `CREATE TABLE slack_run_replies (
        run_id TEXT PRIMARY KEY,
        bot_id TEXT NOT NULL,
        slack_team_id TEXT NOT NULL,
        channel TEXT NOT NULL,
        thread_ts TEXT NOT NULL,
        created_at BIGINT NOT NULL)`,
    ],
  },
];
