/**
 * Frontend tools: offered to the model in `RunAgentInput.tools`, executed in
 * the page when the model calls them. Their results go back as `tool`
 * messages on the next run.
 */
import type { Tool } from "@ag-ui/client";

/** What running a tool produced: the text for the `tool` message, and an error if it failed. */
export interface ToolOutcome {
  content: string;
  error?: string;
}

/** The tools the page offers, in AG-UI's `Tool` shape (JSON Schema parameters). */
export const FRONTEND_TOOLS: Tool[] = [
  {
    name: "get_current_time",
    description: "Returns the current date and time of the user's browser, in ISO 8601 and in words.",
    parameters: {
      type: "object",
      properties: {
        timeZone: {
          type: "string",
          description: "IANA time zone such as Europe/Paris; the user's own zone if omitted.",
        },
      },
    },
  },
  {
    name: "calculate",
    description: "Evaluates an arithmetic expression with + - * / % ^ and parentheses, e.g. (2+3)*4^2.",
    parameters: {
      type: "object",
      properties: {
        expression: { type: "string", description: "The expression to evaluate." },
      },
      required: ["expression"],
    },
  },
];

/** Runs the tool `name` with its JSON `argsJson` (as the model streamed it). Never throws. */
export function executeTool(name: string, argsJson: string, now: Date = new Date()): ToolOutcome {
  let args: Record<string, unknown>;
  try {
    const parsed: unknown = argsJson.trim() === "" ? {} : JSON.parse(argsJson);
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
      return failure("arguments must be a JSON object");
    }
    args = parsed as Record<string, unknown>;
  } catch {
    return failure("arguments are not valid JSON");
  }
  switch (name) {
    case "get_current_time":
      return currentTime(args, now);
    case "calculate": {
      const expression = args.expression;
      if (typeof expression !== "string") return failure("`expression` must be a string");
      try {
        const value = evaluate(expression);
        return { content: JSON.stringify({ expression, result: value }) };
      } catch (error) {
        return failure(error instanceof Error ? error.message : String(error));
      }
    }
    default:
      return failure(`unknown tool: ${name}`);
  }
}

function failure(message: string): ToolOutcome {
  return { content: JSON.stringify({ error: message }), error: message };
}

function currentTime(args: Record<string, unknown>, now: Date): ToolOutcome {
  const timeZone = typeof args.timeZone === "string" && args.timeZone !== "" ? args.timeZone : undefined;
  try {
    const words = new Intl.DateTimeFormat("en-GB", { dateStyle: "full", timeStyle: "long", timeZone }).format(now);
    const zone = timeZone ?? Intl.DateTimeFormat().resolvedOptions().timeZone;
    return { content: JSON.stringify({ iso: now.toISOString(), local: words, timeZone: zone }) };
  } catch {
    return failure(`unknown time zone: ${timeZone}`);
  }
}

/**
 * Evaluates arithmetic without `eval`: a recursive-descent parser over
 * numbers, `+ - * / %`, right-associative `^`, unary signs and parentheses.
 */
export function evaluate(source: string): number {
  if (source.length > 500) throw new Error("expression too long");
  let pos = 0;
  const peek = (): string => {
    while (source[pos] === " " || source[pos] === "\t") pos++;
    return source[pos] ?? "";
  };
  const expect = (c: string): void => {
    if (peek() !== c) throw new Error(`expected '${c}' at position ${pos + 1}`);
    pos++;
  };
  let depth = 0;
  const expression = (): number => {
    let value = term();
    for (;;) {
      const c = peek();
      if (c === "+") {
        pos++;
        value += term();
      } else if (c === "-") {
        pos++;
        value -= term();
      } else return value;
    }
  };
  const term = (): number => {
    let value = power();
    for (;;) {
      const c = peek();
      if (c === "*" || c === "×") {
        pos++;
        value *= power();
      } else if (c === "/" || c === "÷") {
        pos++;
        const divisor = power();
        if (divisor === 0) throw new Error("division by zero");
        value /= divisor;
      } else if (c === "%") {
        pos++;
        const divisor = power();
        if (divisor === 0) throw new Error("division by zero");
        value %= divisor;
      } else return value;
    }
  };
  const power = (): number => {
    const base = unary();
    if (peek() === "^") {
      pos++;
      return base ** power();
    }
    return base;
  };
  const unary = (): number => {
    const c = peek();
    if (c === "-") {
      pos++;
      return -unary();
    }
    if (c === "+") {
      pos++;
      return unary();
    }
    return primary();
  };
  const primary = (): number => {
    const c = peek();
    if (c === "(") {
      if (++depth > 50) throw new Error("too deeply nested");
      pos++;
      const value = expression();
      expect(")");
      depth--;
      return value;
    }
    const match = /^(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?/.exec(source.slice(pos));
    if (!match) {
      throw new Error(c === "" ? "unexpected end of expression" : `unexpected '${c}' at position ${pos + 1}`);
    }
    pos += match[0].length;
    return Number(match[0]);
  };
  const value = expression();
  if (peek() !== "") throw new Error(`unexpected '${peek()}' at position ${pos + 1}`);
  if (!Number.isFinite(value)) throw new Error("result is not a finite number");
  return value;
}
