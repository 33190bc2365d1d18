"""Drives the official `openai` Python SDK against a live thinkwire server.

Usage: openai_client.py BASE_URL [--api chat|responses] [--visibility full] [--prompt TEXT]
       openai_client.py BASE_URL --schema JSON --prompt TEXT   (structured outputs)
       openai_client.py BASE_URL --choices N [--seed S]         (n answers)

Chat completions (`--api chat`), streaming with a tool: turn 1 streams
reasoning and a tool call; turn 2 sends back the assistant message with its
`reasoning_details` and the tool result; then the same turn 2 with the
sealed value altered must be refused with OpenAI's error shape, as must a
`frequency_penalty` out of range; then one answer with `logprobs=True` and
`top_logprobs=2`, streamed and not.

Responses (`--api responses`), streaming with `store=False` and
`include=["reasoning.encrypted_content"]`: turn 2 passes back turn 1's
output items and the tool's output; an altered `encrypted_content` must be
refused; then one answer with `message.output_text.logprobs` included.

Several choices (`--choices N`): one chat completion with `n=N`, streamed
(each choice's text gathered by its index), then the same not streamed.

Prints a JSON summary on stdout for the Rust test to check.
"""

import argparse
import json
import sys

import openai

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather in a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}


def stream_turn(client, messages, extra):
    """One streamed turn: reasoning, content, tool calls, reasoning_details, usage."""
    out = {"reasoning": "", "reasoning_content": "", "content": "", "tool_calls": {},
           "details": [], "finish": None, "usage": None}
    stream = client.chat.completions.create(
        model="thinkwire", messages=messages, tools=[WEATHER], stream=True,
        stream_options={"include_usage": True}, temperature=0, extra_body=extra)
    for chunk in stream:
        if chunk.usage is not None:
            out["usage"] = chunk.usage.model_dump()
        for choice in chunk.choices:
            delta = choice.delta
            extra_fields = delta.model_extra or {}
            out["reasoning"] += extra_fields.get("reasoning") or ""
            out["reasoning_content"] += extra_fields.get("reasoning_content") or ""
            out["details"] += extra_fields.get("reasoning_details") or []
            out["content"] += delta.content or ""
            for call in delta.tool_calls or []:
                slot = out["tool_calls"].setdefault(call.index, {"id": None, "name": "", "arguments": ""})
                if call.id:
                    slot["id"] = call.id
                if call.function and call.function.name:
                    slot["name"] += call.function.name
                if call.function and call.function.arguments:
                    slot["arguments"] += call.function.arguments
            if choice.finish_reason:
                out["finish"] = choice.finish_reason
    out["tool_calls"] = [out["tool_calls"][i] for i in sorted(out["tool_calls"])]
    return out


def assistant_message(turn):
    message = {"role": "assistant", "content": turn["content"] or None,
               "reasoning_details": turn["details"]}
    if turn["tool_calls"]:
        message["tool_calls"] = [
            {"id": c["id"], "type": "function",
             "function": {"name": c["name"], "arguments": c["arguments"]}}
            for c in turn["tool_calls"]]
    return message


def tampered(details):
    out = json.loads(json.dumps(details))
    data = out[0]["data"]
    # Flip one character of the sealed envelope (after the id).
    i = len(data) - 5
    out[0]["data"] = data[:i] + ("A" if data[i] != "A" else "B") + data[i + 1:]
    return out


RESPONSES_WEATHER = dict(WEATHER["function"], type="function")


def responses_turn(client, items, extra):
    """One streamed Responses turn: event types, texts, and the final output items."""
    out = {"events": [], "reasoning": "", "summary": "", "content": "", "arguments": "",
           "output": [], "usage": None}
    stream = client.responses.create(
        model="thinkwire", input=items, tools=[RESPONSES_WEATHER], stream=True, store=False,
        include=["reasoning.encrypted_content"], temperature=0, extra_body=extra)
    for event in stream:
        out["events"].append(event.type)
        if event.type == "response.reasoning_text.delta":
            out["reasoning"] += event.delta
        elif event.type == "response.reasoning_summary_text.delta":
            out["summary"] += event.delta
        elif event.type == "response.output_text.delta":
            out["content"] += event.delta
        elif event.type == "response.function_call_arguments.delta":
            out["arguments"] += event.delta
        elif event.type in ("response.completed", "response.incomplete"):
            # `incomplete`: the token limit cut the answer off.
            out["status"] = event.response.status
            out["output"] = [item.model_dump(exclude_none=True) for item in event.response.output]
            out["usage"] = event.response.usage.model_dump()
    return out


def responses(client, prompt, extra):
    items = [{"role": "user", "content": prompt}]
    turn1 = responses_turn(client, items, extra)
    summary = {"turn1": turn1}
    calls = [i for i in turn1["output"] if i["type"] == "function_call"]
    if not any(i["type"] == "reasoning" for i in turn1["output"]):
        return summary
    items += turn1["output"]
    if calls:
        items.append({"type": "function_call_output", "call_id": calls[0]["call_id"],
                      "output": '{"temperature_c": 18, "sky": "sunny"}'})
    else:
        items.append({"role": "user", "content": "Say it again, briefly."})
    # The prompt turn 2 starts from, counted before it runs.
    counted = client.responses.input_tokens.count(
        model="thinkwire", input=items, tools=[RESPONSES_WEATHER], extra_body=extra)
    summary["turn2_counted"] = counted.model_dump()
    summary["turn2"] = responses_turn(client, items, extra)
    bad = json.loads(json.dumps(items))
    for item in bad:
        if item.get("type") == "reasoning":
            item["encrypted_content"] = tampered([{"data": item["encrypted_content"]}])[0]["data"]
    try:
        responses_turn(client, bad, extra)
        summary["tampered"] = {"refused": False}
    except openai.APIStatusError as err:
        summary["tampered"] = {"refused": True, "status": err.status_code, "body": err.body}
    summary["logprobs"] = responses_logprobs(client, prompt)
    return summary


def responses_logprobs(client, prompt):
    """One streamed answer with `message.output_text.logprobs` included:
    the text, the entries on its deltas, and those on the final part."""
    out = {"content": "", "deltas": [], "final": []}
    stream = client.responses.create(
        model="thinkwire", input=prompt, stream=True, store=False,
        include=["message.output_text.logprobs"], top_logprobs=2)
    for event in stream:
        if event.type == "response.output_text.delta":
            out["content"] += event.delta
            out["deltas"] += [e.model_dump() for e in event.logprobs]
        elif event.type in ("response.completed", "response.incomplete"):
            for item in event.response.output:
                if item.type == "message":
                    out["final"] += [e.model_dump() for e in item.content[0].logprobs]
    return out


def structured(client, prompt, schema):
    """`response_format` (chat completions) and `text.format` (responses):
    the answers, and the refusal of a schema with a bad type."""
    out = {}
    chat = client.chat.completions.create(
        model="thinkwire", messages=[{"role": "user", "content": prompt}], temperature=0,
        response_format={"type": "json_schema",
                         "json_schema": {"name": "answer", "schema": schema, "strict": True}},
        extra_body={"reasoning": {"visibility": "off"}})
    out["chat"] = chat.choices[0].message.content
    stream = client.responses.create(
        model="thinkwire", input=prompt, stream=True, store=False, temperature=0,
        text={"format": {"type": "json_schema", "name": "answer", "schema": schema}},
        extra_body={"reasoning": {"visibility": "off"}})
    out["responses"] = "".join(e.delta for e in stream if e.type == "response.output_text.delta")
    try:
        client.chat.completions.create(
            model="thinkwire", messages=[{"role": "user", "content": prompt}],
            response_format={"type": "json_schema",
                             "json_schema": {"name": "x", "schema": {"type": "objekt"}}})
        out["bad"] = {"refused": False}
    except openai.APIStatusError as err:
        out["bad"] = {"refused": True, "status": err.status_code, "body": err.body}
    return out


def completions(client, prompt):
    """Legacy completions of a raw prompt: whole with log-probabilities,
    and streamed with the usage."""
    whole = client.completions.create(model="thinkwire", prompt=prompt, max_tokens=40, logprobs=1)
    streamed, usage = "", None
    for chunk in client.completions.create(
            model="thinkwire", prompt=prompt, max_tokens=40, stream=True,
            stream_options={"include_usage": True}):
        if chunk.choices:
            streamed += chunk.choices[0].text
        if chunk.usage is not None:
            usage = chunk.usage.model_dump()
    return {"whole": whole.model_dump(), "streamed": streamed, "stream_usage": usage}


def choices(client, prompt, n, seed):
    """`n` answers to one prompt, streamed and then whole, by choice index."""
    kwargs = {"model": "thinkwire", "messages": [{"role": "user", "content": prompt}],
              "n": n, "temperature": 1, "max_tokens": 40,
              "extra_body": {"reasoning": {"visibility": "full"}}}
    if seed is not None:
        kwargs["seed"] = seed
    streamed, usage = {}, None
    stream = client.chat.completions.create(
        stream=True, stream_options={"include_usage": True}, **kwargs)
    for chunk in stream:
        if chunk.usage is not None:
            usage = chunk.usage.model_dump()
        for choice in chunk.choices:
            slot = streamed.setdefault(choice.index, {"content": "", "reasoning": "", "finish": None})
            slot["content"] += choice.delta.content or ""
            slot["reasoning"] += (choice.delta.model_extra or {}).get("reasoning") or ""
            if choice.finish_reason:
                slot["finish"] = choice.finish_reason
    whole = client.chat.completions.create(**kwargs)
    return {
        "streamed": [dict(streamed[i], index=i) for i in sorted(streamed)],
        "stream_usage": usage,
        "whole": [{"index": c.index, "content": c.message.content,
                   "reasoning": (c.message.model_extra or {}).get("reasoning") or "",
                   "finish": c.finish_reason} for c in whole.choices],
        "whole_usage": whole.usage.model_dump(),
    }


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("base_url")
    parser.add_argument("--api", default="chat", choices=["chat", "responses", "completions"])
    parser.add_argument("--visibility", default="full")
    parser.add_argument("--prompt", default="What is the weather in Paris?")
    parser.add_argument("--schema", help="a JSON schema: ask for a structured answer")
    parser.add_argument("--choices", type=int, help="ask for this many answers (n)")
    parser.add_argument("--seed", type=int)
    args = parser.parse_args()
    client = openai.OpenAI(base_url=args.base_url, api_key="unused", max_retries=0)
    if args.choices:
        print(json.dumps(choices(client, args.prompt, args.choices, args.seed)))
        return
    if args.schema:
        print(json.dumps(structured(client, args.prompt, json.loads(args.schema))))
        return
    if args.api == "completions":
        print(json.dumps(completions(client, args.prompt)))
        return
    extra = {"reasoning": {"visibility": args.visibility}}
    if args.api == "responses":
        print(json.dumps(responses(client, args.prompt, extra)))
        return
    models = client.models.list()

    messages = [{"role": "user", "content": args.prompt}]
    turn1 = stream_turn(client, messages, extra)
    summary = {"models": [m.id for m in models.data], "turn1": turn1}
    if not turn1["details"]:
        print(json.dumps(summary))
        return
    messages.append(assistant_message(turn1))
    if turn1["tool_calls"]:
        messages.append({"role": "tool", "tool_call_id": turn1["tool_calls"][0]["id"],
                         "content": '{"temperature_c": 18, "sky": "sunny"}'})
    else:
        messages.append({"role": "user", "content": "Say it again, briefly."})
    summary["turn2"] = stream_turn(client, messages, extra)

    bad = list(messages)
    bad[1] = dict(bad[1], reasoning_details=tampered(turn1["details"]))
    try:
        stream_turn(client, bad, extra)
        summary["tampered"] = {"refused": False}
    except openai.APIStatusError as err:
        summary["tampered"] = {"refused": True, "status": err.status_code, "body": err.body}
    # A sampling value out of OpenAI's range is refused naming it.
    try:
        client.chat.completions.create(
            model="thinkwire", messages=[{"role": "user", "content": args.prompt}],
            frequency_penalty=5)
        summary["bad_penalty"] = {"refused": False}
    except openai.APIStatusError as err:
        summary["bad_penalty"] = {"refused": True, "status": err.status_code, "body": err.body}
    summary["logprobs"] = log_probabilities(client, args.prompt)
    print(json.dumps(summary))


def log_probabilities(client, prompt):
    """One answer with its tokens' log-probabilities, whole and streamed:
    each side's text and entries, as the SDK's types parse them."""
    ask = dict(model="thinkwire", messages=[{"role": "user", "content": prompt}],
               logprobs=True, top_logprobs=2)
    whole = client.chat.completions.create(**ask).choices[0]
    text, entries = "", []
    for chunk in client.chat.completions.create(stream=True, **ask):
        for choice in chunk.choices:
            text += choice.delta.content or ""
            if choice.logprobs is not None and choice.logprobs.content:
                entries += [e.model_dump() for e in choice.logprobs.content]
    return {
        "whole": {"content": whole.message.content,
                  "entries": [e.model_dump() for e in whole.logprobs.content]},
        "stream": {"content": text, "entries": entries},
    }


if __name__ == "__main__":
    sys.exit(main())
