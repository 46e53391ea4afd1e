#!/usr/bin/env python3
"""Writes request logs the way real clients do, against a real llama.cpp server.

Five scripted sessions, each with one known prefix breaker (or none), are sent one request at
a time, in order, through a real client; the log is whatever that client's own logging
writes:

- `openai`: the OpenAI Python client; each call is written as a record
  `{"request", "response", "metadata": {"session_id"}}`, as an application logs its traffic.
- `otel`: the same client instrumented by `opentelemetry-instrumentation-openai-v2` (message
  content capture on), its spans exported by the OpenTelemetry SDK as OTLP JSON, one
  `ExportTraceServiceRequest` a line.
- `openinference`: the same client instrumented by `openinference-instrumentation-openai`, each
  session under `using_session`, exported the same way.
- `litellm`: `litellm.completion` against the server as an OpenAI-compatible endpoint, with a
  custom logging callback writing LiteLLM's standard logging payload, one a line.

Usage: clients.py --url http://127.0.0.1:PORT --client openai|otel|openinference|litellm --out FILE
                  [--model NAME] [--stream]

`--stream` (openai only): each call streams (`stream_options.include_usage`), and the record's
response is the streamed chunks put back together, with the usage of the final chunk.
"""

import argparse
import datetime
import json
import os
import sys
import time

# Long enough stable instructions that a break before them visibly costs tokens.
STABLE = "\n".join(
    f"Rule {i}: answer the customer's question about order handling precisely, cite the policy "
    f"section, and never promise a refund the policy does not allow."
    for i in range(1, 13)
)

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": f"Look up the {what} of an order.",
            "parameters": {
                "type": "object",
                "properties": {"order_id": {"type": "string"}},
                "required": ["order_id"],
            },
        },
    }
    for name, what in [
        ("get_status", "shipping status"),
        ("get_items", "items"),
        ("get_invoice", "invoice"),
    ]
]

QUESTIONS = [
    "Where is my order 1182?",
    "Can I change the delivery address?",
    "And what about the invoice?",
]
# The assistant turns each session carries forward: fixed text, not the random model's output.
ANSWERS = ["It shipped yesterday.", "Yes, until it leaves the depot."]

LOOKUP = {"status": "shipped", "carrier": "DHL", "eta": "2026-12-02", "order": "1182"}


def clock(turn):
    at = datetime.datetime(2026, 11, 30, 9, 26, 53) + datetime.timedelta(minutes=7 * turn)
    return at.strftime("%Y-%m-%d %H:%M:%S")


def conversation(name, system, turns, tools=None):
    """The requests of one session: turn k sends the first k questions and answers (each
    session asks its own, as different users do)."""
    requests = []
    for k in range(1, turns + 1):
        messages = [{"role": "system", "content": system(k)}]
        for i in range(k):
            messages.append({"role": "user", "content": f"{QUESTIONS[i]} ({name})"})
            if i < k - 1:
                messages.append({"role": "assistant", "content": ANSWERS[i]})
        body = {"messages": messages}
        if tools:
            body["tools"] = tools(k)
        requests.append(body)
    return requests


def tool_session():
    """A tool call whose result the application re-serializes (sorted keys) on a later turn."""
    system = "You are the order desk.\n" + STABLE
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "get_status", "arguments": '{"order_id": "1182"}'},
    }
    first = [
        {"role": "system", "content": system},
        {"role": "user", "content": f"{QUESTIONS[0]} (tool-result)"},
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1", "content": json.dumps(LOOKUP)},
    ]
    resent = [dict(m) for m in first]
    resent[3]["content"] = json.dumps(LOOKUP, sort_keys=True)
    second = resent + [
        {"role": "assistant", "content": ANSWERS[0]},
        {"role": "user", "content": f"{QUESTIONS[1]} (tool-result)"},
    ]
    return [{"messages": first, "tools": TOOLS}, {"messages": second, "tools": TOOLS}]


def sessions():
    return {
        "clock": conversation(
            "clock",
            lambda k: f"Current time: {clock(k)}\nYou are the order desk.\n{STABLE}", 3),
        "request-id": conversation(
            "request-id",
            lambda k: f"You are the order desk.\n{STABLE[:600]}\nRequest id: 5f0c{k:04d}-9b1e-4c3a-8d2f-{k:012x}\n{STABLE[600:]}",
            3,
        ),
        "tools": conversation(
            "tools",
            lambda k: "You are the order desk.\n" + STABLE,
            3,
            tools=lambda k: TOOLS[k % 3 :] + TOOLS[: k % 3],
        ),
        "tool-result": tool_session(),
        "clean": conversation("clean", lambda k: "You are the order desk.\n" + STABLE, 3),
    }


# Short answers: the slot then holds the prompt plus a few generated tokens.
SETTINGS = {"model": "test", "max_tokens": 3, "temperature": 0}


def streamed(client, request):
    """One streamed call, put back together as the response a non-streamed call returns."""
    chunks = list(client.chat.completions.create(**request))
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    usage = next((c.usage for c in reversed(chunks) if c.usage is not None), None)
    return {
        "id": chunks[0].id,
        "object": "chat.completion",
        "model": chunks[0].model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}}],
        "usage": usage.model_dump(mode="json") if usage else None,
    }


def run_openai(url, out, stream=False):
    import openai

    client = openai.OpenAI(base_url=url + "/v1", api_key="none")
    with open(out, "w") as log:
        for session, requests in sessions().items():
            for body in requests:
                request = {**SETTINGS, **body}
                if stream:
                    request.update(stream=True, stream_options={"include_usage": True})
                    response = streamed(client, request)
                else:
                    response = client.chat.completions.create(**request).model_dump(mode="json")
                record = {
                    "request": request,
                    "response": response,
                    "metadata": {"session_id": session},
                }
                log.write(json.dumps(record) + "\n")


class OtlpJsonLines:
    """An SDK span exporter writing OTLP JSON (`ExportTraceServiceRequest`), one a line."""

    def __init__(self, path):
        self.file = open(path, "w")

    def export(self, spans):
        from google.protobuf.json_format import MessageToDict
        from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
        from opentelemetry.sdk.trace.export import SpanExportResult

        self.file.write(json.dumps(MessageToDict(encode_spans(spans))) + "\n")
        self.file.flush()
        return SpanExportResult.SUCCESS

    def shutdown(self):
        self.file.close()

    def force_flush(self, timeout_millis=30000):
        return True


def run_otel(url, out):
    # Message content on the span itself (gen_ai.input.messages), in the latest GenAI conventions.
    os.environ["OTEL_SEMCONV_STABILITY_OPT_IN"] = "gen_ai_latest_experimental"
    os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "SPAN_ONLY"
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

    provider = TracerProvider()
    exporter = OtlpJsonLines(out)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    OpenAIInstrumentor().instrument(tracer_provider=provider)
    import openai

    client = openai.OpenAI(base_url=url + "/v1", api_key="none")
    for requests in sessions().values():
        for body in requests:
            client.chat.completions.create(**{**SETTINGS, **body})
    provider.shutdown()


def run_openinference(url, out):
    # OpenInference's instrumentation: messages flattened into span attributes, the session from
    # `using_session`, and the server's `prompt_tokens_details.cached_tokens` as
    # `llm.token_count.prompt_details.cache_read`.
    from openinference.instrumentation import using_session
    from openinference.instrumentation.openai import OpenAIInstrumentor
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(OtlpJsonLines(out)))
    OpenAIInstrumentor().instrument(tracer_provider=provider)
    import openai

    client = openai.OpenAI(base_url=url + "/v1", api_key="none")
    for session, requests in sessions().items():
        with using_session(session):
            for body in requests:
                client.chat.completions.create(**{**SETTINGS, **body})
    provider.shutdown()


def run_litellm(url, out):
    os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    import litellm
    from litellm.integrations.custom_logger import CustomLogger

    class StandardPayloadFile(CustomLogger):
        def __init__(self, path):
            super().__init__()
            self.file = open(path, "w")
            self.written = 0

        def log_success_event(self, kwargs, response_obj, start_time, end_time):
            payload = kwargs.get("standard_logging_object")
            self.file.write(json.dumps(payload, default=str) + "\n")
            self.file.flush()
            self.written += 1

    logger = StandardPayloadFile(out)
    litellm.callbacks = [logger]
    sent = 0
    for session, requests in sessions().items():
        for body in requests:
            litellm.completion(
                model="openai/test",
                api_base=url + "/v1",
                api_key="none",
                max_tokens=SETTINGS["max_tokens"],
                temperature=0,
                litellm_session_id=session,
                **body,
            )
            sent += 1
    # The callback runs on LiteLLM's logging thread: wait for the last payload.
    deadline = time.monotonic() + 30
    while logger.written < sent and time.monotonic() < deadline:
        time.sleep(0.05)
    logger.file.close()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument(
        "--client", choices=["openai", "otel", "openinference", "litellm"], required=True
    )
    parser.add_argument("--out", required=True)
    parser.add_argument("--model", default="test", help="the model name the server serves")
    parser.add_argument("--stream", action="store_true", help="openai: stream every call")
    args = parser.parse_args()
    SETTINGS["model"] = args.model
    if args.client == "openai":
        run_openai(args.url, args.out, stream=args.stream)
    else:
        runs = {"otel": run_otel, "openinference": run_openinference, "litellm": run_litellm}
        runs[args.client](args.url, args.out)


if __name__ == "__main__":
    sys.exit(main())
