"""Writes the hosted-API logs of tests/fixtures/audit-hosted/ with the APIs' own client libraries.

No hosted API is reachable from here, so each server answer is built from the API's documented
response format (the sources are in the fixtures' README), and the real client library does the
rest, as it would in a user's program:

- Anthropic: the `anthropic` SDK sends each request (`client.beta.messages.create`, the cache
  diagnostics beta) through an httpx transport that answers with the documented response; the
  SDK validates that answer into its typed `BetaMessage`, and the log keeps the body the SDK sent
  and `message.to_dict()`.
- Bedrock: botocore's `bedrock-runtime` client validates the Converse request against the service
  model, and its Stubber validates the documented response against the `ConverseResponse` shape;
  the log keeps the parameters and the response as boto3 returns it.
- DeepSeek: the OpenAI SDK's `ChatCompletion` model (DeepSeek's API is OpenAI-compatible) over the
  documented usage with `prompt_cache_hit_tokens` / `prompt_cache_miss_tokens`.
- Gemini: google-genai's `GenerateContentResponse` and `Content` models, dumped in the REST
  spelling (camelCase).
- OpenTelemetry: the SDK's tracer and in-memory exporter, spans encoded as OTLP JSON, with the
  attribute names from `opentelemetry-semantic-conventions` and `openinference-semantic-conventions`.

Run: .venv/bin/python tests/audit_support/hosted_logs.py --out tests/fixtures/audit-hosted
"""

import argparse
import datetime
import json
import os

START = datetime.datetime(2026, 11, 30, 10, 0, 0, tzinfo=datetime.timezone.utc)

TOPICS = [
    "refunds", "shipping delays", "damaged parcels", "address changes", "gift cards",
    "warranty claims", "store credit", "split shipments", "customs fees", "price matching",
    "order cancellations", "loyalty points", "invoice copies", "bulk orders", "returns labels",
    "missing items", "pre-orders", "subscriptions", "payment holds", "tax exemptions",
]


def policy(sections=len(TOPICS)):
    """A long, stable support policy written for these fixtures (about 1,400 tokens)."""
    lines = ["You are the order desk of an online store. Follow the policy below exactly."]
    for i, topic in enumerate(TOPICS[:sections], 1):
        lines.append(
            f"Section {i}, {topic}: check the order number and the account first; quote the section "
            f"number when you answer about {topic}; never promise a date the warehouse has not "
            f"confirmed; if the customer asks about {topic} twice, offer a callback from a person; "
            f"keep a note of every answer about {topic} in the ticket, with the time it was given."
        )
    return "\n".join(lines)


def at(seconds):
    return START + datetime.timedelta(seconds=seconds)


def iso(seconds):
    return at(seconds).isoformat().replace("+00:00", "Z")


def metadata(session, sent, done):
    return {"session_id": session, "timestamp": iso(sent), "end_time": iso(done)}


def write(path, records):
    with open(path, "w") as f:
        for r in records:
            f.write(json.dumps(r, sort_keys=True) + "\n")


# --- Anthropic -------------------------------------------------------------------------------

ANTHROPIC_TOOLS = [
    {"name": "lookup_order", "description": "Look up an order by its number.",
     "input_schema": {"type": "object", "properties": {"order": {"type": "string"}}, "required": ["order"]}},
    {"name": "refund_order", "description": "Refund an order in full or in part.",
     "input_schema": {"type": "object", "properties": {"order": {"type": "string"}, "amount": {"type": "number"}},
                      "required": ["order"]}},
]


def anthropic_log(out):
    import anthropic
    import httpx2 as httpx  # the SDK's HTTP client package

    pending = {}

    def answer(request):
        return httpx.Response(200, json=pending.pop("response"))

    client = anthropic.Anthropic(
        api_key="none", base_url="http://documented.invalid",
        http_client=httpx.Client(transport=httpx.MockTransport(answer)), max_retries=0,
    )
    sent_bodies = []

    def record_body(request):
        sent_bodies.append(json.loads(request.content))

    client._client.event_hooks["request"].append(record_body)

    def system(clock, ttl=None):
        control = {"type": "ephemeral", **({"ttl": ttl} if ttl else {})}
        return [{"type": "text", "text": f"Current time: {clock}\n{policy()}", "cache_control": control}]

    turns = [
        ("Where is order 1042?", "Order 1042 left the warehouse yesterday (section 2)."),
        ("Can I change its address?", "Not after dispatch; I can ask the carrier (section 4)."),
        ("Please ask the carrier.", "Done: the carrier will call you today."),
        ("And refund the shipping?", "Shipping is refunded when the delay passes five days (section 2)."),
        ("Thanks, that is all.", "You are welcome."),
    ]

    def messages(n, first=None):
        out = []
        for i, (question, reply) in enumerate(turns[:n]):
            out.append({"role": "user", "content": [{"type": "text", "text": first if (i == 0 and first) else question}]})
            if i < n - 1:
                out.append({"role": "assistant", "content": [{"type": "text", "text": reply}]})
        return out

    def usage(input_tokens, read, five=0, hour=0):
        return {"input_tokens": input_tokens, "output_tokens": 24, "cache_read_input_tokens": read,
                "cache_creation_input_tokens": five + hour,
                "cache_creation": {"ephemeral_5m_input_tokens": five, "ephemeral_1h_input_tokens": hour}}

    def reason(kind, missed=None):
        r = {"type": kind}
        if missed is not None:
            r["cache_missed_input_tokens"] = missed
        return {"cache_miss_reason": r}

    # (session, sent, done, model, system, tools, messages, usage, diagnostics)
    calls = [
        ("desk", 0, 2.1, "claude-sonnet-5", system("10:00"), ANTHROPIC_TOOLS, messages(1), usage(14, 0, five=1536), None),
        ("desk", 20, 21.8, "claude-sonnet-5", system("10:00"), ANTHROPIC_TOOLS, messages(2), usage(12, 1536, five=40), None),
        # A clock in the system prompt: the server names the system prompt.
        ("desk", 90, 92.3, "claude-sonnet-5", system("10:01"), ANTHROPIC_TOOLS, messages(3),
         usage(11, 0, five=1612), reason("system_changed", 1576)),
        # The tools in another order: the server names the tools.
        ("desk", 120, 122.5, "claude-sonnet-5", system("10:01"), ANTHROPIC_TOOLS[::-1], messages(4),
         usage(12, 0, five=1660), reason("tools_changed", 1623)),
        # Sent one second after the previous one, before its response was complete: the same
        # prefix, but its write is not visible yet. No structural change: no diagnostics.
        ("desk", 121.5, 123.4, "claude-sonnet-5", system("10:01"), ANTHROPIC_TOOLS[::-1], messages(5),
         usage(10, 0, five=1702), None),
        # An earlier turn edited: the server names the messages.
        ("desk", 200, 201.9, "claude-sonnet-5", system("10:01"), ANTHROPIC_TOOLS[::-1],
         messages(5, first="Where is my order 1042?"), usage(10, 1581, five=121), reason("messages_changed", 121)),
        # A 1 h entry, read ten minutes later.
        ("research", 5, 7.0, "claude-sonnet-5", system("09:59", ttl="1h"), None, messages(1), usage(14, 0, hour=1480), None),
        ("research", 605, 606.2, "claude-sonnet-5", system("09:59", ttl="1h"), None, messages(2),
         usage(12, 1480, five=40), reason("previous_message_not_found")),
        # Another model: nothing is shared across models.
        ("switch", 300, 301.5, "claude-sonnet-5", system("10:05"), None, messages(1), usage(14, 0, five=1480), None),
        ("switch", 330, 331.0, "claude-opus-4-8", system("10:05"), None, messages(2),
         usage(12, 0, five=1520), reason("model_changed", 1480)),
    ]
    records = []
    previous = {}
    for n, (session, sent, done, model, sys_, tools, msgs, use, diagnostics) in enumerate(calls):
        pending["response"] = {
            "id": f"msg_{n:04d}", "type": "message", "role": "assistant", "model": model,
            "content": [{"type": "text", "text": "Noted."}], "stop_reason": "end_turn",
            "stop_sequence": None, "usage": use, "diagnostics": diagnostics,
        }
        kwargs = {"model": model, "max_tokens": 256, "system": sys_, "messages": msgs,
                  "diagnostics": {"previous_message_id": previous.get(session)},
                  "betas": ["cache-diagnosis-2026-04-07"]}
        if tools:
            kwargs["tools"] = tools
        message = client.beta.messages.create(**kwargs)
        previous[session] = message.id
        records.append({"request": sent_bodies[-1], "response": message.to_dict(),
                        "metadata": metadata(session, sent, done)})
    write(os.path.join(out, "anthropic.jsonl"), records)


# --- Amazon Bedrock Converse ------------------------------------------------------------------

def bedrock_log(out):
    import botocore.session
    from botocore.stub import Stubber

    client = botocore.session.get_session().create_client(
        "bedrock-runtime", region_name="us-east-1",
        aws_access_key_id="none", aws_secret_access_key="none",
    )
    tools = {"tools": [
        {"toolSpec": {"name": "lookup_order", "description": "Look up an order by its number.",
                      "inputSchema": {"json": {"type": "object", "properties": {"order": {"type": "string"}}}}}},
        {"cachePoint": {"type": "default"}},
    ]}
    system = [{"text": policy()}, {"cachePoint": {"type": "default"}}]
    questions = ["Where is order 1042?", "Can I change its address?", "Please ask the carrier."]

    def messages(n):
        out = []
        for i in range(n):
            out.append({"role": "user", "content": [{"text": questions[i]}]})
            if i < n - 1:
                out.append({"role": "assistant", "content": [{"text": "Noted."}]})
        return out

    # (sent, latency ms, read, write, input)
    calls = [(0, 1900, 0, 1545, 9), (30, 1700, 1545, 31, 8), (31.2, 1800, 0, 1590, 7)]
    records = []
    for n, (sent, latency, read, write_, input_) in enumerate(calls):
        params = {"modelId": "anthropic.claude-sonnet-5-v1:0", "system": system,
                  "messages": messages(n + 1), "toolConfig": tools}
        usage = {"inputTokens": input_, "outputTokens": 3, "totalTokens": input_ + 3 + read + write_,
                 "cacheReadInputTokens": read, "cacheWriteInputTokens": write_}
        if write_:
            usage["cacheDetails"] = [{"ttl": "5m", "inputTokens": write_}]
        response = {"output": {"message": {"role": "assistant", "content": [{"text": "Noted."}]}},
                    "stopReason": "end_turn", "usage": usage, "metrics": {"latencyMs": latency}}
        with Stubber(client) as stub:
            stub.add_response("converse", response, params)
            got = client.converse(**params)
        got.pop("ResponseMetadata", None)
        records.append({"request": params, "response": got,
                        "metadata": {"session_id": "desk", "timestamp": iso(sent)}})
    write(os.path.join(out, "bedrock.jsonl"), records)


# --- DeepSeek ---------------------------------------------------------------------------------

def deepseek_log(out):
    from openai.types.chat import ChatCompletion

    system = {"role": "system", "content": policy()}
    records = []
    for n, (sent, hit, miss) in enumerate([(0, 0, 1420), (40, 1408, 30)]):
        messages = [system, {"role": "user", "content": "Where is order 1042?"}]
        if n:
            messages += [{"role": "assistant", "content": "Noted."},
                         {"role": "user", "content": "Can I change its address?"}]
        response = ChatCompletion.model_validate({
            "id": f"ds-{n}", "object": "chat.completion", "created": int(at(sent).timestamp()),
            "model": "deepseek-chat",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": "Noted."}}],
            "usage": {"prompt_tokens": hit + miss, "completion_tokens": 3, "total_tokens": hit + miss + 3,
                      "prompt_cache_hit_tokens": hit, "prompt_cache_miss_tokens": miss},
        })
        records.append({"request": {"model": "deepseek-chat", "messages": messages, "user": "desk"},
                        "response": response.model_dump(mode="json", exclude_none=True),
                        "metadata": {"session_id": "desk", "timestamp": iso(sent)}})
    write(os.path.join(out, "deepseek.jsonl"), records)


# --- Gemini -----------------------------------------------------------------------------------

def gemini_log(out):
    from google.genai import types

    system = types.Content(parts=[types.Part(text=policy())])
    tool = types.Tool(function_declarations=[types.FunctionDeclaration(
        name="lookup_order", description="Look up an order by its number.",
        parameters_json_schema={"type": "object", "properties": {"order": {"type": "string"}}})])
    records = []
    for n, (sent, cached, prompt) in enumerate([(0, 0, 1436), (40, 1024, 1460)]):
        contents = [types.Content(role="user", parts=[types.Part(text="Where is order 1042?")])]
        if n:
            contents += [types.Content(role="model", parts=[types.Part(text="Noted.")]),
                         types.Content(role="user", parts=[types.Part(text="Can I change its address?")])]
        usage = {"promptTokenCount": prompt, "candidatesTokenCount": 3, "totalTokenCount": prompt + 3}
        if cached:
            usage["cachedContentTokenCount"] = cached
        response = types.GenerateContentResponse.model_validate({
            "candidates": [{"content": {"role": "model", "parts": [{"text": "Noted."}]}, "finishReason": "STOP"}],
            "usageMetadata": usage, "modelVersion": "gemini-2.5-flash",
        })
        dump = lambda m: m.model_dump(mode="json", by_alias=True, exclude_none=True)
        request = {"model": "gemini-2.5-flash", "systemInstruction": dump(system),
                   "contents": [dump(c) for c in contents], "tools": [dump(tool)]}
        records.append({"request": request, "response": dump(response),
                        "metadata": {"session_id": "desk", "timestamp": iso(sent)}})
    write(os.path.join(out, "gemini.jsonl"), records)


# --- OpenTelemetry: GenAI semantic conventions and OpenInference ------------------------------

def otel_log(out):
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.id_generator import IdGenerator
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as G
    from openinference.semconv.trace import MessageAttributes, SpanAttributes

    class CountingIds(IdGenerator):
        """Trace and span ids counted from 1, so the log is the same on every run."""

        def __init__(self):
            self.next = 0

        def generate_span_id(self):
            self.next += 1
            return self.next

        def generate_trace_id(self):
            return self.generate_span_id()

    exporter = InMemorySpanExporter()
    provider = TracerProvider(id_generator=CountingIds(), resource=Resource({"service.name": "order-desk"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("hosted_logs")
    nanos = lambda seconds: int(at(seconds).timestamp() * 1e9)
    questions = ["Where is order 1042?", "Can I change its address?"]

    def span(name, sent, done, attributes):
        s = tracer.start_span(name, start_time=nanos(sent), attributes=attributes)
        s.end(end_time=nanos(done))

    system = json.dumps([{"type": "text", "content": policy()}])
    for n, (sent, done, read, write_, deprecated) in enumerate([(0, 1.5, 0, 1408, False), (1.0, 2.4, 0, 1456, True)]):
        messages = []
        for i in range(n + 1):
            messages.append({"role": "user", "parts": [{"type": "text", "content": questions[i]}]})
            if i < n:
                messages.append({"role": "assistant", "parts": [{"type": "text", "content": "Noted."}]})
        attributes = {
            G.GEN_AI_OPERATION_NAME: "chat", G.GEN_AI_REQUEST_MODEL: "gpt-4.1",
            G.GEN_AI_CONVERSATION_ID: "genai", "gen_ai.system_instructions": system,
            "gen_ai.input.messages": json.dumps(messages),
            G.GEN_AI_USAGE_INPUT_TOKENS: 1430 + 30 * n,
        }
        # The second span writes the attribute these conventions deprecated.
        attributes["gen_ai.usage.cache_read_input_tokens" if deprecated else G.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS] = read
        attributes[G.GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS] = write_
        span("chat gpt-4.1", sent, done, attributes)
    for n, (sent, done, read) in enumerate([(100, 101.5, 0), (160, 161.2, 1408)]):
        attributes = {SpanAttributes.OPENINFERENCE_SPAN_KIND: "LLM", SpanAttributes.LLM_MODEL_NAME: "gpt-4.1",
                      SpanAttributes.SESSION_ID: "openinference",
                      SpanAttributes.LLM_TOKEN_COUNT_PROMPT: 1430 + 30 * n,
                      SpanAttributes.LLM_TOKEN_COUNT_PROMPT_DETAILS_CACHE_READ: read}
        chat = [("system", policy())]
        for i in range(n + 1):
            chat.append(("user", questions[i]))
            if i < n:
                chat.append(("assistant", "Noted."))
        for i, (role, content) in enumerate(chat):
            base = f"{SpanAttributes.LLM_INPUT_MESSAGES}.{i}."
            attributes[base + MessageAttributes.MESSAGE_ROLE] = role
            attributes[base + MessageAttributes.MESSAGE_CONTENT] = content
        span("ChatCompletion", sent, done, attributes)
    provider.shutdown()
    with open(os.path.join(out, "otel.jsonl"), "w") as f:
        for s in exporter.get_finished_spans():
            f.write(json.dumps(MessageToDict(encode_spans([s])), sort_keys=True) + "\n")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for log in (anthropic_log, bedrock_log, deepseek_log, gemini_log, otel_log):
        log(args.out)


if __name__ == "__main__":
    main()
