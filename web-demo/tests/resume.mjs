// Browser test of a run that survives a network blip (issue #34, item 3).
// The page reaches the server through a TCP proxy (the Rust test
// tests/server/web_demo_resume.rs runs both) that cuts the page's first
// WebSocket mid-reasoning, as a network failure would: no close frame. The
// page must reconnect by itself, resume the run, and end with the whole
// reasoning in its panel (nothing repeated, nothing missing) and the
// sealed value's badge.
//
//   node tests/resume.mjs BASE_URL SCREENSHOT_DIR --reasoning TEXT [--chromium PATH]
//
// Prints one line per check and exits non-zero if any failed.
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

const argv = process.argv.slice(2);
const args = { chromium: process.env.CHROMIUM || "/usr/bin/chromium" };
[args.baseUrl, args.shots] = argv;
for (let i = 2; i < argv.length; i++) {
  if (argv[i] === "--reasoning") args.reasoning = argv[++i];
  else if (argv[i] === "--chromium") args.chromium = argv[++i];
}
if (!args.baseUrl || !args.shots || args.reasoning === undefined) {
  process.stderr.write("usage: node tests/resume.mjs BASE_URL SCREENSHOT_DIR --reasoning TEXT [--chromium PATH]\n");
  process.exit(2);
}

const sel = (id) => `[data-testid="${id}"]`;
const sockets = [];

function fail(message) {
  throw new Error(message);
}

async function main() {
  await mkdir(args.shots, { recursive: true });
  const profile = await mkdtemp(join(tmpdir(), "thinkwire-resume-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: args.chromium,
    headless: true,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"],
  });
  const page = context.pages()[0] ?? (await context.newPage());
  const pageErrors = [];
  page.on("pageerror", (error) => pageErrors.push(error.message));
  page.on("websocket", (ws) => {
    if (!ws.url().includes("/agent/ws")) return;
    const socket = { sent: [], received: [] };
    sockets.push(socket);
    const record = (list) => ({ payload }) => {
      try {
        list.push(JSON.parse(payload));
      } catch {
        list.push(null);
      }
    };
    ws.on("framesent", record(socket.sent));
    ws.on("framereceived", record(socket.received));
  });
  try {
    await page.goto(args.baseUrl, { waitUntil: "load" });
    await page.evaluate(() => localStorage.clear());
    await page.reload({ waitUntil: "load" });
    await page.waitForSelector(`${sel("connection-state")}[data-state="open"]`, { timeout: 20_000 });
    await page.selectOption(sel("visibility"), "full");
    await page.fill(sel("composer-input"), "Think it through, then answer.");
    await page.click(sel("send"));
    await page.waitForFunction(() => Number(document.body.dataset.completedTurns ?? 0) >= 1, null, { timeout: 60_000 });
    await page.screenshot({ path: join(args.shots, "resumed-run.png"), fullPage: true }).catch(() => {});

    // The socket that carried the run's input (the page also opened one before its reload).
    const first = sockets.find((s) => s.sent.some((f) => Array.isArray(f?.messages)));
    const types = (frames) => frames.map((f) => f?.type);
    if (!first) fail("no WebSocket carried the run's input");
    const firstTypes = types(first.received);
    if (!firstTypes.includes("REASONING_MESSAGE_CONTENT")) fail("the first socket was cut before the reasoning streamed");
    if (firstTypes.includes("REASONING_MESSAGE_END")) fail("the first socket saw the reasoning end: the cut was not mid-reasoning");
    console.log(`ok   cut mid-reasoning after ${first.received.length} frames`);

    const resumedOn = sockets.slice(sockets.indexOf(first) + 1).find((s) => s.sent.some((f) => f?.type === "RESUME_RUN"));
    if (!resumedOn) fail(`no later socket sent RESUME_RUN (${sockets.length} sockets)`);
    const resume = resumedOn.sent.find((f) => f?.type === "RESUME_RUN");
    const lastSeq = Math.max(...first.received.map((f) => f?.seq ?? 0));
    if (resume.lastSeq !== lastSeq) fail(`RESUME_RUN asked after ${resume.lastSeq}, the page had ${lastSeq}`);
    if (resumedOn.sent.some((f) => Array.isArray(f?.messages))) fail("the page sent the run's input again");
    console.log(`ok   resumed on socket ${sockets.indexOf(resumedOn) + 1} after event ${resume.lastSeq}`);

    const error = await page.evaluate(() => {
      const box = document.querySelector('[data-testid="run-error"]');
      return box && !box.hidden ? box.textContent.replace(/\s+/g, " ").trim() : null;
    });
    if (error) fail(`the page shows an error: ${error}`);
    const panel = await page.evaluate(() => {
      const p = document.querySelector('[data-testid="reasoning-panel"]');
      return {
        content: p?.querySelector('[data-testid="reasoning-content"]')?.textContent ?? "",
        badgeBytes: Number(p?.querySelector('[data-testid="sealed-badge"]')?.dataset.bytes ?? 0),
      };
    });
    if (panel.content.trim() !== args.reasoning.trim()) {
      fail(`the reasoning panel holds ${JSON.stringify(panel.content)}, expected ${JSON.stringify(args.reasoning)}`);
    }
    console.log(`ok   the reasoning panel holds the whole reasoning once (${panel.content.trim().length} chars)`);
    if (!(panel.badgeBytes > 0)) fail("no sealed badge: the sealed value did not arrive");
    const sealed = resumedOn.received.filter((f) => f?.type === "REASONING_ENCRYPTED_VALUE");
    if (sealed.length !== 1) fail(`${sealed.length} sealed values on the resumed socket`);
    console.log(`ok   the sealed value arrived (${panel.badgeBytes} bytes)`);
    if (pageErrors.length) fail(`page errors: ${pageErrors.join("; ")}`);
  } finally {
    await context.close();
    await rm(profile, { recursive: true, force: true });
  }
}

main().catch((error) => {
  console.log(`FAIL ${error.message}`);
  process.exit(1);
});
