#!/usr/bin/env python3
"""Writes request logs of real agent frameworks talking to a real llama.cpp server.

The frameworks (smolagents through LiteLLM, the OpenAI Agents SDK, LangGraph with
langchain-openai) run unchanged against a logging proxy in this process, which forwards
every chat-completions request to the llama.cpp server and writes one record a request:

    {"request": <what the framework sent>,
     "response": <what the framework received>,
     "metadata": {"session_id", "framework", "server_response": <what the server returned>}}

A random-weight model does not call tools by itself, so the proxy scripts the tool calls:
for a request with tools it answers the framework with the next scripted tool call of the
run, and keeps the server's own reply (generated, >= 32 tokens, with its token ids from
`logprobs`) in `metadata.server_response`. A request past the script, or without tools,
gets the server's own reply unchanged. The server's cache therefore holds what it generated,
and the record says so.

Runs (one session each):
- `smolagents`: a ToolCallingAgent with a planning step every 2 steps (the planning
  requests switch the system prompt and drop the tools), through LiteLLM.
- `openai-agents`: an Agent over Chat Completions with a `strict` function tool, three user
  turns in a SQLiteSession limited to the last 4 items (the oldest turns drop out).
- `langgraph`: create_react_agent with a checkpointer and a `trim_messages` pre-model hook,
  three user turns in one thread.

Usage: agent_runs.py --url http://127.0.0.1:PORT --out FILE [--framework NAME ...]
"""

import argparse
import asyncio
import json
import os
import sys
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# Replies the server generates: at least this many tokens, all of them (no early EOS).
REPLY_TOKENS = 32


class Proxy:
    """A logging, tool-call-scripting proxy in front of one llama.cpp server."""

    def __init__(self, upstream, out):
        self.upstream = upstream.rstrip("/")
        self.log = open(out, "w")
        self.session = None
        self.framework = None
        self.script = []
        self.calls = 0
        self.lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                length = int(self.headers.get("content-length", 0))
                request = json.loads(self.rfile.read(length))
                try:
                    status, answer = proxy.answer(self.path, request)
                except Exception as e:  # a failure must reach the test, not hang it
                    status, answer = 500, {"error": {"message": f"proxy: {e!r}"}}
                body = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def start(self, framework, session, script):
        self.framework, self.session, self.script = framework, session, list(script)

    def answer(self, path, request):
        if not path.endswith("/chat/completions"):
            return 404, {"error": {"message": f"proxy: no {path}"}}
        if request.get("stream"):
            raise ValueError("streaming requests are not scripted here")
        forwarded = dict(request)
        for key in ("max_completion_tokens", "stream_options", "parallel_tool_calls", "store"):
            forwarded.pop(key, None)
        forwarded.update(
            max_tokens=REPLY_TOKENS, ignore_eos=True, logprobs=True, top_logprobs=1,
            temperature=0,
        )
        with self.lock:
            server = post(self.upstream + "/v1/chat/completions", forwarded)
            reply = server
            # A `None` in the script: the server's own reply (a turn's final answer).
            if request.get("tools") and self.script:
                call = self.script.pop(0)
                if call is not None:
                    reply = scripted(server, call, self.calls)
                    self.calls += 1
            record = {
                "request": request,
                "response": reply,
                "metadata": {
                    "session_id": self.session,
                    "framework": self.framework,
                    "server_response": server,
                },
            }
            self.log.write(json.dumps(record, ensure_ascii=False) + "\n")
            self.log.flush()
        return 200, reply

    def close(self):
        self.server.shutdown()
        self.log.close()


def post(url, body):
    data = json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, headers={"content-type": "application/json"})
    with urllib.request.urlopen(req, timeout=300) as r:
        return json.loads(r.read())


def scripted(server, call, n):
    """The server's response with its message replaced by a scripted tool call."""
    name, arguments = call
    message = {
        "role": "assistant",
        "content": None,
        "tool_calls": [{
            "id": f"call_{n:04d}",
            "type": "function",
            # As a hosted API writes them: compact, non-ASCII escaped.
            "function": {"name": name, "arguments": json.dumps(arguments, separators=(",", ":"))},
        }],
    }
    reply = {k: v for k, v in server.items() if k not in ("choices", "timings")}
    reply["choices"] = [{"index": 0, "message": message, "finish_reason": "tool_calls"}]
    return reply


WEATHER = {"Paris": ("sunny", 21), "München": ("rain", 12), "Zürich": ("fog", 9)}


def weather_report(city: str) -> str:
    sky, degrees = WEATHER.get(city, ("clear", 15))
    return json.dumps({"city": city, "sky": sky, "celsius": degrees})


def run_smolagents(proxy):
    from smolagents import LiteLLMModel, ToolCallingAgent, tool

    @tool
    def get_weather(city: str) -> str:
        """Looks up today's weather.

        Args:
            city: The city's name.
        """
        return weather_report(city)

    proxy.start("smolagents", "smolagents-1", [
        ("get_weather", {"city": "Paris"}),
        ("get_weather", {"city": "München"}),
        ("get_weather", {"city": "Zürich"}),
        ("final_answer", {"answer": "Sunny in Paris, rain in München, fog in Zürich."}),
    ])
    model = LiteLLMModel(model_id="openai/test", api_base=proxy.url + "/v1", api_key="none")
    agent = ToolCallingAgent(
        tools=[get_weather], model=model, planning_interval=2, max_steps=6, verbosity_level=0
    )
    agent.run("What is the weather in Paris, München and Zürich today?")


def run_openai_agents(proxy):
    from agents import (Agent, OpenAIChatCompletionsModel, Runner, SessionSettings,
                        SQLiteSession, function_tool, set_tracing_disabled)
    from openai import AsyncOpenAI

    set_tracing_disabled(True)

    @function_tool
    def get_weather(city: str) -> str:
        """Looks up today's weather in a city."""
        return weather_report(city)

    proxy.start("openai-agents", "openai-agents-1", [
        ("get_weather", {"city": "Paris"}),
        None,
        ("get_weather", {"city": "München"}),
        None,
        ("get_weather", {"city": "Zürich"}),
    ])
    client = AsyncOpenAI(base_url=proxy.url + "/v1", api_key="none")
    agent = Agent(
        name="forecaster",
        instructions="You answer questions about the weather. Use the tool for every city.",
        tools=[get_weather],
        model=OpenAIChatCompletionsModel(model="test", openai_client=client),
    )
    session = SQLiteSession("weather", session_settings=SessionSettings(limit=4))

    async def turns():
        for question in ["How is Paris today?", "And München?", "What about Zürich?"]:
            await Runner.run(agent, question, session=session)

    asyncio.run(turns())


def run_langgraph(proxy):
    from langchain_core.messages.utils import count_tokens_approximately, trim_messages
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.prebuilt import create_react_agent

    @tool
    def get_weather(city: str) -> str:
        """Looks up today's weather in a city."""
        return weather_report(city)

    proxy.start("langgraph", "langgraph-1", [
        ("get_weather", {"city": "Paris"}),
        None,
        ("get_weather", {"city": "München"}),
        None,
        ("get_weather", {"city": "Zürich"}),
    ])

    def keep_recent(state):
        trimmed = trim_messages(
            state["messages"], strategy="last", token_counter=count_tokens_approximately,
            max_tokens=260, start_on="human", end_on=("human", "tool"),
        )
        return {"llm_input_messages": trimmed}

    model = ChatOpenAI(model="test", base_url=proxy.url + "/v1", api_key="none")
    agent = create_react_agent(
        model, [get_weather], prompt="You answer questions about the weather.",
        pre_model_hook=keep_recent, checkpointer=InMemorySaver(),
    )
    config = {"configurable": {"thread_id": "weather"}}
    for question in ["How is Paris today?", "And München?", "What about Zürich?"]:
        agent.invoke({"messages": [("user", question)]}, config)


RUNS = {
    "smolagents": run_smolagents,
    "openai-agents": run_openai_agents,
    "langgraph": run_langgraph,
}


def versions():
    from importlib.metadata import version

    names = ["smolagents", "litellm", "openai-agents", "openai", "langgraph", "langchain-openai",
             "langchain-core", "xllamacpp"]
    return {n: version(n) for n in names}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--framework", action="append", choices=sorted(RUNS))
    parser.add_argument("--versions", action="store_true", help="print the framework versions")
    args = parser.parse_args()
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    if args.versions:
        print(json.dumps(versions(), indent=2))
    proxy = Proxy(args.url, args.out)
    try:
        for name in args.framework or list(RUNS):
            RUNS[name](proxy)
    finally:
        proxy.close()


if __name__ == "__main__":
    sys.exit(main())
