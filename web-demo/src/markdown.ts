/**
 * Markdown for untrusted model output.
 *
 * Two layers, because model text is attacker-controlled (prompt injection can
 * make a model write anything): raw HTML in the markdown is shown as text, not
 * parsed; and the HTML that `marked` produces still goes through DOMPurify,
 * which drops scripts, event handlers, `javascript:` URLs and the like.
 * Images are rendered as links so the page never loads a remote resource the
 * model chose.
 */
import DOMPurify from "dompurify";
import { Marked } from "marked";

const escapeHtml = (text: string): string =>
  text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

const marked = new Marked({
  gfm: true,
  breaks: true,
  async: false,
  renderer: {
    // Raw HTML blocks and inline tags: show them, never interpret them.
    html({ text }) {
      return escapeHtml(text);
    },
    // An image is a link to it: nothing is fetched on the model's say-so.
    image({ href, text }) {
      return `<a href="${escapeHtml(href)}">${escapeHtml(text || href)}</a>`;
    },
  },
});

const purify = DOMPurify(window);
purify.addHook("afterSanitizeAttributes", (node) => {
  if (node.tagName === "A") {
    node.setAttribute("target", "_blank");
    node.setAttribute("rel", "noopener noreferrer nofollow");
  }
});

const SANITIZE = {
  USE_PROFILE: { html: true },
  FORBID_TAGS: ["style", "img", "svg", "math", "form", "input", "button", "textarea", "select", "iframe", "video", "audio"],
  FORBID_ATTR: ["style", "class", "id"],
  ALLOW_DATA_ATTR: false,
};

/** Markdown → sanitized HTML string, safe to assign to `innerHTML`. */
export function renderMarkdown(text: string): string {
  const html = marked.parse(text) as string;
  return purify.sanitize(html, SANITIZE) as string;
}
