"""Drives the official `anthropic` Python SDK against a live thinkwire server.

Usage: anthropic_client.py BASE_URL [--prompt TEXT]
       anthropic_client.py BASE_URL --schema JSON --prompt TEXT   (structured outputs)

Messages, streaming with thinking and a tool: turn 1 streams a thinking
block (its signature is the sealed reasoning) and a tool_use; turn 2 sends
back the assistant content as received plus the tool result, its prompt
counted first (`count_tokens`); then turn 2
with an altered signature, and with altered thinking text, must each be
refused in Anthropic's error shape. With --schema, the answer under
`output_config.format` (created and streamed) and the refusal of a schema
with a bad type. Prints a JSON summary on stdout.
"""

import argparse
import json
import sys

import anthropic

WEATHER = {
    "name": "get_weather",
    "description": "Current weather in a city",
    "input_schema": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
}


def stream_turn(client, messages):
    kinds = []
    with client.messages.stream(
        model="thinkwire", max_tokens=256, messages=messages, tools=[WEATHER],
        thinking={"type": "enabled", "budget_tokens": 1024},
    ) as stream:
        for event in stream:
            kinds.append(event.type)
        final = stream.get_final_message()
    return {"events": kinds, "content": [b.model_dump() for b in final.content],
            "stop_reason": final.stop_reason, "usage": final.usage.model_dump()}


def refused(client, messages):
    try:
        stream_turn(client, messages)
        return {"refused": False}
    except anthropic.APIStatusError as err:
        return {"refused": True, "status": err.status_code, "body": err.body}


def structured(client, prompt, schema):
    """`output_config.format`, as the SDK sends it: the answers, created
    and streamed, and the refusal of a schema with a bad type."""
    def ask(schema):
        return dict(model="thinkwire", max_tokens=200,
                    messages=[{"role": "user", "content": prompt}],
                    output_config={"format": {"type": "json_schema", "schema": schema}})
    out = {}
    message = client.messages.create(**ask(schema))
    out["created"] = "".join(b.text for b in message.content if b.type == "text")
    with client.messages.stream(**ask(schema)) as stream:
        out["streamed"] = "".join(stream.text_stream)
    try:
        client.messages.create(**ask({"type": "objekt"}))
        out["bad"] = {"refused": False}
    except anthropic.APIStatusError as err:
        out["bad"] = {"refused": True, "status": err.status_code, "body": err.body}
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("base_url")
    parser.add_argument("--prompt", default="What is the weather in Paris?")
    parser.add_argument("--schema", help="a JSON schema: ask for a structured answer")
    args = parser.parse_args()
    client = anthropic.Anthropic(base_url=args.base_url, api_key="unused", max_retries=0)
    if args.schema:
        print(json.dumps(structured(client, args.prompt, json.loads(args.schema))))
        return

    messages = [{"role": "user", "content": args.prompt}]
    turn1 = stream_turn(client, messages)
    summary = {"turn1": turn1}
    tool_uses = [b for b in turn1["content"] if b["type"] == "tool_use"]
    if not any(b["type"] == "thinking" and b["signature"] for b in turn1["content"]):
        print(json.dumps(summary))
        return
    content = [{k: v for k, v in b.items() if v is not None and k != "citations"}
               for b in turn1["content"]]
    messages.append({"role": "assistant", "content": content})
    if tool_uses:
        messages.append({"role": "user", "content": [{
            "type": "tool_result", "tool_use_id": tool_uses[0]["id"],
            "content": '{"temperature_c": 18, "sky": "sunny"}'}]})
    else:
        messages.append({"role": "user", "content": "Say it again, briefly."})
    # The prompt turn 2 starts from, counted before it runs.
    summary["turn2_counted"] = client.messages.count_tokens(
        model="thinkwire", messages=messages, tools=[WEATHER],
        thinking={"type": "enabled", "budget_tokens": 1024}).model_dump()
    summary["turn2"] = stream_turn(client, messages)

    def altered(change):
        bad = json.loads(json.dumps(messages))
        for block in bad[1]["content"]:
            if block["type"] == "thinking":
                change(block)
        return bad

    def flip_signature(block):
        s = block["signature"]
        i = len(s) - 5
        block["signature"] = s[:i] + ("A" if s[i] != "A" else "B") + s[i + 1:]

    def change_text(block):
        block["thinking"] = block["thinking"] + " (edited)"

    summary["tampered_signature"] = refused(client, altered(flip_signature))
    summary["changed_thinking"] = refused(client, altered(change_text))
    print(json.dumps(summary))


if __name__ == "__main__":
    sys.exit(main())
