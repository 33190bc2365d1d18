// Browser test of the web demo against a live thinkwire server.
//
//   node tests/e2e.mjs BASE_URL SCREENSHOT_DIR [options]
//
//   BASE_URL          where `thinkwire serve` listens, e.g. http://127.0.0.1:8080
//                     (it serves the page at /, the WebSocket at /agent/ws)
//   SCREENSHOT_DIR    created if missing; one PNG per check, fail-*.png on failures
//   --reasoning MODE  auto (default): reasoning checks run when /capabilities says
//                     reasoning.supported, and are skipped otherwise;
//                     require: run them and fail if unsupported; skip: never run them
//   --run-timeout S   seconds one model run may take (default 240: slow CPU models)
//   --chromium PATH   browser binary (default $CHROMIUM or /usr/bin/chromium)
//   --headed          show the browser (debugging)
//
// Drives Debian's Chromium headless through playwright-core (no browser is
// downloaded). Assertions are about structure, not wording: a tiny model says
// unpredictable things, so the checks look at non-empty answers, filled
// panels, badges, the frames on the WebSocket and the page's state.
// Prints one line per check and ends with `web-demo e2e: N passed, M failed[, K skipped]`;
// exits 1 if any check failed, 2 on bad usage.
import { chromium } from "playwright-core";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";

function usage(message) {
  process.stderr.write(`e2e: ${message}\nusage: node tests/e2e.mjs BASE_URL SCREENSHOT_DIR [--reasoning auto|require|skip] [--run-timeout S] [--chromium PATH] [--headed]\n`);
  process.exit(2);
}

function parseArgs(argv) {
  const positional = [];
  const args = { reasoning: "auto", runTimeoutS: 240, chromium: process.env.CHROMIUM || "/usr/bin/chromium", headed: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === "--reasoning") args.reasoning = argv[++i];
    else if (a === "--run-timeout") args.runTimeoutS = Number(argv[++i]);
    else if (a === "--chromium") args.chromium = argv[++i];
    else if (a === "--headed") args.headed = true;
    else if (a.startsWith("--")) usage(`unknown option ${a}`);
    else positional.push(a);
  }
  if (positional.length !== 2) usage("expected BASE_URL and SCREENSHOT_DIR");
  if (!["auto", "require", "skip"].includes(args.reasoning)) usage("--reasoning must be auto, require or skip");
  if (!(args.runTimeoutS > 0)) usage("--run-timeout must be a positive number of seconds");
  [args.baseUrl, args.shots] = positional;
  if (!/^https?:\/\//.test(args.baseUrl)) usage(`BASE_URL must start with http:// or https:// (got ${args.baseUrl})`);
  if (!args.baseUrl.endsWith("/")) args.baseUrl += "/";
  return args;
}

const args = parseArgs(process.argv.slice(2));
const RUN_MS = args.runTimeoutS * 1000;
const UI_MS = 30_000;

/** A failed expectation: its message is what the report prints. */
class CheckFailure extends Error {}
function expect(condition, message) {
  if (!condition) throw new CheckFailure(message);
}

const sel = (id) => `[data-testid="${id}"]`;
const results = [];
let shotIndex = 0;

// ---- frames on the WebSocket -------------------------------------------------

/** Every frame of every agent socket the page opened, in order. */
const frames = [];
let socketsOpened = 0;

function watchSockets(page) {
  page.on("websocket", (ws) => {
    if (!ws.url().includes("/agent/ws")) return;
    socketsOpened++;
    const record = (dir) => ({ payload }) => {
      let json = null;
      if (typeof payload === "string") {
        try {
          json = JSON.parse(payload);
        } catch {
          // Kept as null: a non-JSON frame fails the checks that look for events.
        }
      }
      frames.push({ dir, json, at: Date.now() });
    };
    ws.on("framesent", record("sent"));
    ws.on("framereceived", record("received"));
  });
}

const received = (from, type) => frames.slice(from).filter((f) => f.dir === "received" && f.json?.type === type).map((f) => f.json);
const sentInputs = (from) => frames.slice(from).filter((f) => f.dir === "sent" && Array.isArray(f.json?.messages)).map((f) => f.json);

// ---- driving the page ----------------------------------------------------------

async function waitConnected(page) {
  await page.waitForSelector(`${sel("connection-state")}[data-state="open"]`, { timeout: UI_MS });
}

async function setControls(page, { visibility, effort = "low" }) {
  await page.selectOption(sel("visibility"), visibility);
  await page.selectOption(sel("effort"), effort);
}

/**
 * Sends `prompt` and waits until the page is idle again (tool rounds
 * included). Returns what the turn looked like on the wire and on the page.
 */
async function sendAndWait(page, prompt) {
  const from = frames.length;
  const turnsBefore = await completedTurns(page);
  await page.fill(sel("composer-input"), prompt);
  await page.click(sel("send"));
  let sawPartialAnswer = false;
  const deadline = Date.now() + RUN_MS;
  for (;;) {
    const state = await page.evaluate(() => ({
      completed: Number(document.body.dataset.completedTurns ?? 0),
      partial: Array.from(document.querySelectorAll('[data-testid="answer"][data-state="streaming"]')).some(
        (a) => a.textContent.trim() !== "",
      ),
    }));
    sawPartialAnswer ||= state.partial;
    if (state.completed > turnsBefore) break;
    expect(Date.now() < deadline, `the run did not end within ${args.runTimeoutS} s`);
    await page.waitForTimeout(100);
  }
  return { from, sawPartialAnswer };
}

/** How many sent messages the page has finished answering (it counts them on <body>). */
async function completedTurns(page) {
  return page.evaluate(() => Number(document.body.dataset.completedTurns ?? 0));
}

async function lastTurn(page) {
  return page.evaluate(() => {
    const turns = document.querySelectorAll('[data-testid="assistant-turn"]');
    const turn = turns[turns.length - 1];
    if (!turn) return null;
    const text = (id) => Array.from(turn.querySelectorAll(`[data-testid="${id}"]`), (n) => n.textContent ?? "");
    return {
      answers: text("answer"),
      panels: Array.from(turn.querySelectorAll('[data-testid="reasoning-panel"]'), (p) => ({
        visibility: p.dataset.visibility,
        content: p.querySelector('[data-testid="reasoning-content"]')?.textContent ?? "",
        badgeBytes: Number(p.querySelector('[data-testid="sealed-badge"]')?.dataset.bytes ?? 0),
        muted: p.querySelector('[data-testid="reasoning-content"]')?.classList.contains("muted") ?? false,
      })),
    };
  });
}

async function errorShown(page) {
  return page.evaluate(() => {
    const box = document.querySelector('[data-testid="run-error"]');
    if (!box || box.hidden) return null;
    return box.textContent.replace(/\s+/g, " ").trim();
  });
}

/** The agent's messages as the page stored them. */
async function storedMessages(page) {
  return page.evaluate(() => {
    for (let i = 0; i < localStorage.length; i++) {
      const key = localStorage.key(i);
      if (key && key.startsWith("thinkwire-demo/conversation")) return JSON.parse(localStorage.getItem(key)).messages;
    }
    return null;
  });
}

/** reasoning message id → encryptedValue, for every sealed value the server sent from frame `from` on. */
function sealedValuesSince(from) {
  const values = new Map();
  for (const e of received(from, "REASONING_ENCRYPTED_VALUE")) if (e.subtype === "message") values.set(e.entityId, e.encryptedValue);
  return values;
}

/** Fails unless the first input frame from `from` on carries each of `expected` as a reasoning message with the same value. */
function expectReplayed(from, expected, what) {
  const inputs = sentInputs(from);
  expect(inputs.length > 0, `no RunAgentInput frame was sent for ${what}`);
  const replayed = new Map(
    inputs[0].messages.filter((m) => m.role === "reasoning" && typeof m.encryptedValue === "string").map((m) => [m.id, m.encryptedValue]),
  );
  for (const [id, value] of expected) {
    expect(replayed.has(id), `the ${what} frame does not carry reasoning message ${id} (it carries ${replayed.size} sealed reasoning messages)`);
    expect(replayed.get(id) === value, `the ${what} frame carries a different encryptedValue for ${id}`);
  }
  return replayed.size;
}

// ---- the checks --------------------------------------------------------------------

async function check(page, name, fn, { skip } = {}) {
  const index = String(++shotIndex).padStart(2, "0");
  const slug = name.replace(/[^a-z0-9]+/gi, "-").toLowerCase();
  if (skip) {
    results.push({ name, status: "skipped", detail: skip });
    console.log(`- skip ${name}: ${skip}`);
    return;
  }
  const started = Date.now();
  try {
    const detail = await fn();
    await page.screenshot({ path: join(args.shots, `${index}-${slug}.png`), fullPage: true }).catch(() => {});
    results.push({ name, status: "passed", detail });
    console.log(`ok   ${name} (${((Date.now() - started) / 1000).toFixed(1)} s)${detail ? `: ${detail}` : ""}`);
  } catch (error) {
    await page.screenshot({ path: join(args.shots, `fail-${index}-${slug}.png`), fullPage: true }).catch(() => {});
    const message = error instanceof CheckFailure ? error.message : `${error?.name ?? "Error"}: ${error?.message ?? error}`;
    results.push({ name, status: "failed", detail: message });
    console.log(`FAIL ${name} (${((Date.now() - started) / 1000).toFixed(1)} s): ${message}`);
  }
}

async function main() {
  await mkdir(args.shots, { recursive: true });
  const profile = await mkdtemp(join(tmpdir(), "thinkwire-e2e-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: args.chromium,
    headless: !args.headed,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ].filter((a) => args.headed ? a !== "--headless" : true),
    viewport: { width: 1100, height: 900 },
  });
  const pageErrors = [];
  try {
    const page = context.pages()[0] ?? (await context.newPage());
    page.on("pageerror", (error) => pageErrors.push(error.message));
    watchSockets(page);

    let reasoning = args.reasoning !== "skip";
    let capabilities = null;

    await check(page, "page loads and connects over WebSocket", async () => {
      await page.goto(args.baseUrl, { waitUntil: "load", timeout: UI_MS });
      await page.evaluate(() => localStorage.clear());
      await page.reload({ waitUntil: "load" });
      await waitConnected(page);
      await page.waitForFunction(() => !document.querySelector('[data-testid="capabilities"]').textContent.includes("…"), null, { timeout: UI_MS });
      capabilities = await page.evaluate(async () => (await fetch("capabilities")).json().catch(() => null));
      const supported = Boolean(capabilities?.reasoning?.supported);
      if (args.reasoning === "auto") reasoning = supported;
      expect(args.reasoning !== "require" || supported, "--reasoning require, but /capabilities says reasoning.supported is not true");
      const caps = await page.textContent(sel("capabilities"));
      return `capabilities shown as "${caps.trim()}"`;
    });
    const noReasoning = reasoning ? undefined : "the model does not reason (capabilities.reasoning.supported is false)";

    // Turn 1: `full` when the model reasons (panel must fill), else the default.
    let turn1 = null;
    let sealed1 = new Map();
    await check(page, "a message streams an answer", async () => {
      await setControls(page, { visibility: reasoning ? "full" : "hidden" });
      turn1 = await sendAndWait(page, "What is the capital of France? Answer in one short sentence.");
      const error = await errorShown(page);
      expect(!error, `the page shows an error: ${error}`);
      const deltas = received(turn1.from, "TEXT_MESSAGE_CONTENT");
      const runs = received(turn1.from, "RUN_STARTED").length;
      expect(runs >= 1, "no RUN_STARTED frame arrived");
      expect(received(turn1.from, "RUN_FINISHED").length === runs, "not every run ended with RUN_FINISHED");
      expect(deltas.length > 0, "no TEXT_MESSAGE_CONTENT frame arrived");
      const view = await lastTurn(page);
      const answer = view?.answers.join("").trim() ?? "";
      expect(answer.length > 0, "the answer on the page is empty");
      sealed1 = sealedValuesSince(turn1.from);
      return `${deltas.length} text deltas, ${answer.length} chars rendered${turn1.sawPartialAnswer ? ", partial answer seen while streaming" : ""}`;
    });

    await check(
      page,
      "reasoning panel fills in `full` mode",
      async () => {
        expect(turn1, "the first turn did not run");
        const deltas = received(turn1.from, "REASONING_MESSAGE_CONTENT").filter((e) => e.delta !== "");
        expect(deltas.length > 0, "no non-empty REASONING_MESSAGE_CONTENT frame arrived in full mode");
        const view = await lastTurn(page);
        const panel = view?.panels.find((p) => p.content.trim() !== "" && !p.muted);
        expect(panel, `no reasoning panel with readable content (panels: ${JSON.stringify(view?.panels)})`);
        return `${deltas.length} reasoning deltas, panel holds ${panel.content.trim().length} chars`;
      },
      { skip: noReasoning },
    );

    // Turn 2: `hidden` — a sealed badge, no readable reasoning; its input replays turn 1's sealed values.
    let turn2 = null;
    let sealed2 = new Map();
    await check(
      page,
      "sealed badge in `hidden` mode",
      async () => {
        await setControls(page, { visibility: "hidden" });
        turn2 = await sendAndWait(page, "And what is the capital of Italy?");
        const error = await errorShown(page);
        expect(!error, `the page shows an error: ${error}`);
        const leaked = received(turn2.from, "REASONING_MESSAGE_CONTENT").filter((e) => e.delta !== "");
        expect(leaked.length === 0, `${leaked.length} readable reasoning deltas arrived in hidden mode`);
        sealed2 = sealedValuesSince(turn2.from);
        expect(sealed2.size > 0, "no REASONING_ENCRYPTED_VALUE frame arrived in hidden mode");
        const view = await lastTurn(page);
        const badge = view?.panels.find((p) => p.badgeBytes > 0);
        expect(badge, `no sealed badge on the turn (panels: ${JSON.stringify(view?.panels)})`);
        return `badge shows ${badge.badgeBytes} bytes`;
      },
      { skip: noReasoning },
    );

    await check(
      page,
      "second turn's frame carries the encryptedValue",
      async () => {
        expect(turn2, "the second turn did not run");
        expect(sealed1.size > 0, "the first turn received no REASONING_ENCRYPTED_VALUE to replay");
        const n = expectReplayed(turn2.from, sealed1, "second turn's RunAgentInput");
        return `${n} sealed reasoning message(s) replayed, values identical`;
      },
      { skip: noReasoning },
    );

    let before = null;
    await check(page, "reload keeps the conversation", async () => {
      before = await page.evaluate(() => ({
        users: Array.from(document.querySelectorAll('[data-testid="user-text"]'), (n) => n.textContent),
        answers: Array.from(document.querySelectorAll('[data-testid="answer"]'), (n) => n.textContent),
        badges: document.querySelectorAll('[data-testid="sealed-badge"]').length,
      }));
      expect(before.users.length >= 1, "nothing to keep: no user message on the page");
      const storedBefore = await storedMessages(page);
      await page.reload({ waitUntil: "load" });
      await waitConnected(page);
      await page.waitForFunction((n) => document.querySelectorAll('[data-testid="user-text"]').length >= n, before.users.length, { timeout: UI_MS });
      const after = await page.evaluate(() => ({
        users: Array.from(document.querySelectorAll('[data-testid="user-text"]'), (n) => n.textContent),
        answers: Array.from(document.querySelectorAll('[data-testid="answer"]'), (n) => n.textContent),
        badges: document.querySelectorAll('[data-testid="sealed-badge"]').length,
      }));
      expect(JSON.stringify(after.users) === JSON.stringify(before.users), "the user messages differ after the reload");
      expect(JSON.stringify(after.answers) === JSON.stringify(before.answers), "the answers differ after the reload");
      expect(after.badges === before.badges, `sealed badges: ${before.badges} before the reload, ${after.badges} after`);
      const storedAfter = await storedMessages(page);
      expect(JSON.stringify(storedAfter) === JSON.stringify(storedBefore), "the stored messages changed across the reload");
      if (reasoning) {
        const sealedStored = (storedAfter ?? []).filter((m) => m.role === "reasoning" && m.encryptedValue);
        expect(sealedStored.length >= sealed1.size + sealed2.size, `localStorage holds ${sealedStored.length} sealed reasoning messages, expected ${sealed1.size + sealed2.size}`);
      }
      return `${after.users.length} user turns, ${after.answers.length} answers, ${after.badges} sealed badges restored`;
    });

    await check(
      page,
      "after the reload, the next turn replays the earlier sealed reasoning",
      async () => {
        const turn3 = await sendAndWait(page, "Thanks. One more: the capital of Spain?");
        const error = await errorShown(page);
        expect(!error, `the page shows an error: ${error}`);
        const expected = new Map([...sealed1, ...sealed2]);
        const n = expectReplayed(turn3.from, expected, "post-reload RunAgentInput");
        const answer = (await lastTurn(page))?.answers.join("").trim() ?? "";
        expect(received(turn3.from, "RUN_FINISHED").length >= 1, "the post-reload run did not finish");
        return `${n} sealed reasoning messages replayed; answer ${answer.length} chars`;
      },
      { skip: noReasoning },
    );

    await check(page, "stop button ends the run with no error", async () => {
      await setControls(page, { visibility: reasoning ? "full" : "hidden" });
      const prompts = [
        "Write a long story about a lighthouse keeper and a storm, at least 600 words.",
        "List the numbers from 1 to 500, one per line, each with a short comment.",
      ];
      const attempts = [];
      for (const prompt of prompts) {
        const from = frames.length;
        const turnsBefore = await completedTurns(page);
        await page.fill(sel("composer-input"), prompt);
        await page.click(sel("send"));
        // Stop once the model produces output (or after a while in the prefill).
        const until = Date.now() + Math.min(RUN_MS, 60_000);
        while (Date.now() < until) {
          const produced = frames.slice(from).some((f) => f.dir === "received" && /_(CONTENT|ARGS)$/.test(f.json?.type ?? ""));
          const ended = received(from, "RUN_FINISHED").length + received(from, "RUN_ERROR").length > 0;
          if (produced || ended) break;
          await page.waitForTimeout(50);
        }
        const endedEarly = received(from, "RUN_FINISHED").length + received(from, "RUN_ERROR").length > 0;
        if (!endedEarly && (await page.isEnabled(sel("stop")))) await page.click(sel("stop"));
        await page.waitForFunction((n) => Number(document.body.dataset.completedTurns ?? 0) > n, turnsBefore, { timeout: RUN_MS });
        const error = await errorShown(page);
        expect(!error, `the page shows an error after Stop: ${error}`);
        const cancel = frames.slice(from).find((f) => f.dir === "sent" && f.json?.type === "CANCEL_RUN");
        const started = received(from, "RUN_STARTED").at(-1);
        const finished = received(from, "RUN_FINISHED");
        expect(received(from, "RUN_ERROR").length === 0, "a RUN_ERROR arrived after Stop");
        if (cancel) {
          expect(cancel.json.runId === started?.runId, `CANCEL_RUN names run ${cancel.json.runId}, the run is ${started?.runId}`);
          expect(finished.length === 1, "no RUN_FINISHED arrived after CANCEL_RUN");
          if (finished[0].outcome?.type === "cancelled") {
            const status = await page.getAttribute(sel("run-status"), "data-state");
            expect(status === "stopped", `run status is "${status}", expected "stopped"`);
            expect(!(await page.isEnabled(sel("stop"))), "the stop button is still enabled");
            const streamed = frames.slice(from).filter((f) => f.dir === "received" && f.at <= cancel.at && /_CONTENT$/.test(f.json?.type ?? "")).length;
            return `CANCEL_RUN sent after ${streamed} content frames; RUN_FINISHED outcome cancelled; no error shown`;
          }
        }
        attempts.push(cancel ? "the run finished before the server saw CANCEL_RUN" : "the run finished before Stop could be clicked");
      }
      throw new CheckFailure(`could not stop a run: ${attempts.join("; ")}`);
    });

    await check(page, "reconnects when the socket drops", async () => {
      await waitConnected(page);
      const socketsBefore = socketsOpened;
      // Record what the page shows at each connection change (the page's own listener runs first).
      await page.evaluate(() => {
        window.__connectionLog = [];
        window.thinkwireDemo.agent.onConnectionChange((status) => {
          const shown = document.querySelector('[data-testid="connection-text"]');
          window.__connectionLog.push({ state: status.state, shown: shown.textContent.replace(/\s+/g, " ").trim() });
        });
        window.thinkwireDemo.agent.reconnect();
      });
      await page.waitForFunction(() => window.__connectionLog.some((e) => e.state !== "open"), null, { timeout: UI_MS });
      await waitConnected(page);
      const log = await page.evaluate(() => window.__connectionLog);
      const down = log.find((e) => e.state === "reconnecting" || e.state === "connecting");
      expect(down, `the page never showed a lost connection: ${JSON.stringify(log)}`);
      expect(socketsOpened > socketsBefore, "no new WebSocket was opened");
      return `${log.map((e) => e.state).join(" → ")}; showed "${down.shown}"`;
    });

    await check(page, "no uncaught errors in the page", async () => {
      expect(pageErrors.length === 0, `uncaught: ${pageErrors.join(" | ")}`);
    });
  } finally {
    await context.close().catch(() => {});
    await rm(profile, { recursive: true, force: true }).catch(() => {});
  }

  const passed = results.filter((r) => r.status === "passed").length;
  const failed = results.filter((r) => r.status === "failed");
  const skipped = results.filter((r) => r.status === "skipped").length;
  for (const f of failed) console.error(`web-demo e2e failure: ${f.name}: ${f.detail}`);
  console.log(`web-demo e2e: ${passed} passed, ${failed.length} failed${skipped ? `, ${skipped} skipped` : ""}`);
  process.exit(failed.length > 0 ? 1 : 0);
}

main().catch((error) => {
  console.error(`web-demo e2e: could not run: ${error?.stack ?? error}`);
  console.log("web-demo e2e: 0 passed, 1 failed");
  process.exit(1);
});
