// vaultmem:owned - the OpenClaw memory plugin that `vaultmem setup openclaw` loads from the
// installed vaultmem package (plugins.load.paths). Plain ESM JavaScript, no dependencies: it
// runs the same `vaultmem hook EVENT` commands Claude Code's hooks run, by the absolute
// interpreter setup wrote (`<python> -I -m vaultmem`), in a folder outside the vault.
//
// OpenClaw 2026.9.6, as its docs describe it (node_modules/openclaw/docs/plugins/hooks.md,
// .../hooks/reference.md, .../hooks/prompt-and-session.md):
// - `before_prompt_build` (modify, 15 s default budget) may return `appendSystemContext`:
//   added to the system prompt of this model call. What it returns as `prependContext` is
//   NOT kept in the session's history (measured: the next turn's request no longer has it),
//   so the pack and every delta live in this plugin's per-session state and go out, as one
//   system block, with every turn of the session: in each request once, never lost to
//   compaction (the system prompt is not compacted);
// - `agent_end` (observe, 30 s) hands the session's messages: they are written as a
//   transcript in OpenClaw's own session-file shape (`{"type": "session", ...}` then
//   `{"type": "message", "message": ...}`, dist/session-manager-*.mjs) and the `stop`
//   (checkpoint) and `session-end` (queue the turns not queued yet for retention) hooks read it;
// - `before_compaction` (observe) gets the messages about to be compacted: checkpoint first;
// - `session_end` (observe) ends the session's state;
// - `resolve_exec_env` adds VAULTMEM_VAULT / VAULTMEM_AGENT to the `exec` tool's environment.
// The tools (read, append, recall, retain, ack, ...) are vaultmem's MCP server, which setup
// registers under `mcp.servers.vaultmem` (docs/cli/mcp/registry.md): one contract everywhere.
//
// A failure never breaks a turn: a hook that fails or runs out of time adds nothing, and the
// reason goes to OpenClaw's log (and vaultmem's .vaultmem/hooks.log).

import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

const PLUGIN_ID = "vaultmem";
const MAX_DELTA_CHARS = 12000; // what the session's block keeps of the deltas, newest first
const TIMEOUTS = { "session-start": 30000, prompt: 15000, stop: 15000, "pre-compact": 30000, "session-end": 30000 };

/** OpenClaw's state folder, resolved as OpenClaw does (docs/help/environment.md), then ours. */
export function stateRoot(env = process.env) {
  const state = (env.OPENCLAW_STATE_DIR || "").trim();
  if (state) return path.join(state, "vaultmem");
  const home = (env.OPENCLAW_HOME || "").trim() || os.homedir();
  return path.join(home, ".openclaw", "vaultmem");
}

function safe(name) {
  return String(name || "session").replace(/[^A-Za-z0-9._-]/g, "_").slice(0, 120) || "session";
}

function writeAtomic(file, text) {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, text, { mode: 0o600 });
  fs.renameSync(tmp, file);
}

/** Run `vaultmem hook EVENT` with the payload on stdin; resolves (never rejects) to
 * {context, stdout, stderr, code, error}. */
export function runHook(config, event, payload, timeoutMs) {
  return new Promise((resolve) => {
    const [exe, ...pre] = config.command;
    const args = [...pre, "hook", event, "--vault", config.vault, "--agent", config.agent];
    const cwd = stateRoot();
    let child;
    try {
      fs.mkdirSync(cwd, { recursive: true });
      child = spawn(exe, args, {
        cwd, // outside the vault: nothing there is imported or run
        env: { ...process.env, VAULTMEM_VAULT: config.vault, VAULTMEM_AGENT: config.agent },
        stdio: ["pipe", "pipe", "pipe"],
      });
    } catch (err) {
      resolve({ context: "", stdout: "", stderr: "", code: null, error: String(err) });
      return;
    }
    const out = [];
    const err = [];
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill("SIGKILL");
    }, timeoutMs || config.timeoutMs || TIMEOUTS[event] || 15000);
    child.stdout.on("data", (d) => out.push(d));
    child.stderr.on("data", (d) => err.push(d));
    child.stdin.on("error", () => {});
    child.on("error", (e) => {
      clearTimeout(timer);
      resolve({ context: "", stdout: "", stderr: "", code: null, error: String(e) });
    });
    child.on("close", (code) => {
      clearTimeout(timer);
      const stdout = Buffer.concat(out).toString("utf8");
      const stderr = Buffer.concat(err).toString("utf8");
      resolve({
        context: contextOf(stdout),
        stdout,
        stderr,
        code,
        error: timedOut ? `vaultmem hook ${event} ran out of time` : "",
      });
    });
    child.stdin.end(JSON.stringify(payload));
  });
}

function contextOf(stdout) {
  const text = stdout.trim();
  if (!text) return "";
  try {
    const data = JSON.parse(text);
    const context = data && data.hookSpecificOutput && data.hookSpecificOutput.additionalContext;
    return typeof context === "string" ? context : "";
  } catch {
    return "";
  }
}

// --- per-session state: the pack and the deltas this session was given ---------------------

function sessionFile(ctx) {
  return path.join(stateRoot(), "sessions", safe(ctx.agentId || "main"), `${safe(ctx.sessionId || ctx.sessionKey)}.json`);
}

function loadSession(file) {
  try {
    const data = JSON.parse(fs.readFileSync(file, "utf8"));
    if (data && typeof data.pack === "string" && Array.isArray(data.deltas)) return data;
  } catch {
    // no state yet (a new session) or unreadable state: start the session again
  }
  return null;
}

/** The system block of a session: its pack, then what came since, oldest first. */
export function render(state) {
  const parts = state.pack ? [state.pack] : [];
  if (state.deltas.length) {
    const left = state.dropped ? `\n\n(${state.dropped} earlier updates of this session left out: \`vaultmem log\` lists them.)` : "";
    parts.push(`## vaultmem: new in the shared memory during this session${left}\n\n${state.deltas.join("\n\n")}`);
  }
  return parts.join("\n\n");
}

export function addDelta(state, context) {
  state.deltas.push(context);
  let size = state.deltas.reduce((n, d) => n + d.length, 0);
  while (state.deltas.length > 1 && size > MAX_DELTA_CHARS) {
    size -= state.deltas.shift().length;
    state.dropped = (state.dropped || 0) + 1;
  }
}

// --- the transcript the stop / pre-compact / session-end hooks read ---------------------------

// A turn's first-seen time, kept in the session's state: `agent_end` hands the current user
// message with the time the run took it, and later turns' history carries the same message
// with the time OpenClaw admitted it (measured: 4 s apart). vaultmem's retention ledger knows a
// turn by role, time and text, so a turn keeps the time it was first written with and is
// queued once.
function stableTimes(state, messages, now) {
  const times = (state.times = state.times || {});
  const seen = {};
  return messages.map((message) => {
    const own = message && typeof message.timestamp === "number" ? new Date(message.timestamp).toISOString() : now;
    const text = JSON.stringify([message && message.role, plain(message && message.content), message && message.toolCallId]);
    const digest = createHash("sha1").update(text).digest("hex").slice(0, 16);
    const k = (seen[digest] = (seen[digest] || 0) + 1);
    const key = `${digest}#${k}`;
    if (!times[key]) times[key] = own;
    return times[key];
  });
}

// what a message says, the same whether OpenClaw hands its content as a string or as blocks
function plain(content) {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content.map((b) => (b && (b.type === "text" ? b.text : b.type === "toolCall" ? `tool:${b.id}` : "")) || "").join("\n");
}

function writeTranscript(ctx, messages, state) {
  const file = path.join(stateRoot(), "transcripts", safe(ctx.agentId || "main"), `${safe(ctx.sessionId || ctx.sessionKey)}.jsonl`);
  const now = new Date().toISOString();
  const times = stableTimes(state, messages, now);
  const lines = [JSON.stringify({ type: "session", version: 4, id: ctx.sessionId || null, timestamp: times[0] || now, cwd: ctx.workspaceDir || null })];
  messages.forEach((message, i) => {
    lines.push(JSON.stringify({ type: "message", id: `m${i + 1}`, parentId: i ? `m${i}` : null, timestamp: times[i], message }));
  });
  writeAtomic(file, lines.join("\n") + "\n");
  return file;
}

function payload(ctx, fields) {
  return { session_id: ctx.sessionId || ctx.sessionKey || null, cwd: ctx.workspaceDir || null, ...fields };
}

// VAULTMEM_OPENCLAW_TIMINGS=FILE: each handler appends {"hook", "ms"} (the time the turn waited
// for it, spawn included) to FILE; what bench/openclaw_turn.py reads
function timed(name, handler) {
  const file = process.env.VAULTMEM_OPENCLAW_TIMINGS;
  if (!file) return handler;
  return async (event, ctx) => {
    const t = process.hrtime.bigint();
    try {
      return await handler(event, ctx);
    } finally {
      const ms = Number(process.hrtime.bigint() - t) / 1e6;
      fs.appendFileSync(file, JSON.stringify({ hook: name, ms }) + "\n");
    }
  };
}

const plugin = {
  id: PLUGIN_ID,
  name: "vaultmem",
  description: "Shared agent memory in a vaultmem vault",
  register(api) {
    const config = api.pluginConfig || {};
    const log = api.logger || console;
    if (!Array.isArray(config.command) || !config.command.length || !config.vault || !config.agent) {
      log.warn?.("vaultmem: plugin config lacks command, vault or agent: run `vaultmem setup openclaw` again");
      return;
    }
    const report = (event, result) => {
      if (result.error || (result.stderr && result.stderr.trim())) {
        log.warn?.(`vaultmem hook ${event}: ${(result.error || result.stderr).trim().slice(0, 500)}`);
      }
      return result;
    };
    const hook = async (event, fields, ctx) => report(event, await runHook(config, event, payload(ctx, fields)));

    api.on("before_prompt_build", timed("before_prompt_build", async (event, ctx) => {
      const file = sessionFile(ctx);
      let state = loadSession(file);
      if (!state || !state.packed) {
        const started = await hook("session-start", { hook_event_name: "SessionStart", source: "startup" }, ctx);
        state = { ...(state || {}), pack: started.context, deltas: [], dropped: 0, packed: true };
      }
      const prompt = typeof event.currentUserMessage === "string" ? event.currentUserMessage : event.prompt;
      const turn = await hook("prompt", { hook_event_name: "UserPromptSubmit", prompt: prompt || "" }, ctx);
      if (turn.context) addDelta(state, turn.context);
      try {
        writeAtomic(file, JSON.stringify(state));
      } catch (err) {
        log.warn?.(`vaultmem: could not save the session's state: ${err}`);
      }
      const block = render(state);
      return block ? { appendSystemContext: block } : undefined;
    }));

    api.on("agent_end", timed("agent_end", async (event, ctx) => {
      if (!Array.isArray(event.messages) || !event.messages.length) return;
      const file = sessionFile(ctx);
      const state = loadSession(file) || { pack: "", deltas: [], dropped: 0 };
      let transcript;
      try {
        transcript = writeTranscript(ctx, event.messages, state);
        writeAtomic(file, JSON.stringify(state));
      } catch (err) {
        log.warn?.(`vaultmem: could not write the transcript: ${err}`);
        return;
      }
      // side by side: the checkpoint and the queue are separate state, and the turn waits once
      await Promise.all([
        hook("stop", { hook_event_name: "Stop", transcript_path: transcript, stop_hook_active: false }, ctx),
        hook("session-end", { hook_event_name: "SessionEnd", transcript_path: transcript, reason: "agent_end" }, ctx),
      ]);
    }));

    api.on("before_compaction", timed("before_compaction", async (event, ctx) => {
      if (!Array.isArray(event.messages) || !event.messages.length) return;
      const file = sessionFile(ctx);
      const state = loadSession(file) || { pack: "", deltas: [], dropped: 0 };
      const transcript = writeTranscript(ctx, event.messages, state);
      writeAtomic(file, JSON.stringify(state));
      await hook("pre-compact", { hook_event_name: "PreCompact", transcript_path: transcript, trigger: "auto" }, ctx);
    }));

    api.on("session_end", timed("session_end", async (_event, ctx) => {
      fs.rmSync(sessionFile(ctx), { force: true }); // a later session opens with a pack again
    }));

    api.on("resolve_exec_env", () => ({ VAULTMEM_VAULT: config.vault, VAULTMEM_AGENT: config.agent }));
  },
};

export default plugin;
