"""Save -> diagnostics latency of `prefixlint server` for a 4 KB template with three samples,
against `prefixlint check` of the same file (a fresh process: tokenizer load included), in
the same run. Usage: python3 bench/server.py BINARY [--runs N]"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

binary = os.path.abspath(sys.argv[1])
runs = int(sys.argv[sys.argv.index("--runs") + 1]) if "--runs" in sys.argv else 30

STABLE = (
    "You are the support assistant of ACME Outdoor Gear, a retailer of tents, backpacks and "
    "climbing equipment. Answer in the customer's language, politely and concisely, and never "
    "invent order details. Cite the policy section you rely on.\n"
)


def template_text(n):
    body = "".join(f"Policy {i}: {STABLE}" for i in range(17))
    text = f"Current time: {{{{ now }}}} (edit {n})\n{body}Customer: {{{{ user }}}}\nQuestion: {{{{ question }}}}\n"
    return text


def frame(message):
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def read(stdout):
    length = None
    while True:
        line = stdout.readline()
        if not line:
            raise SystemExit("the server closed its output")
        line = line.strip()
        if not line:
            break
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    return json.loads(stdout.read(length))


def main():
    with tempfile.TemporaryDirectory() as root:
        path = os.path.join(root, "prompt.j2")
        with open(path, "w") as f:
            f.write(template_text(0))
        with open(os.path.join(root, "prompt.samples.yaml"), "w") as f:
            f.write(
                "- {user: Ada, question: Where is my order 1042?}\n"
                "- {user: Linus, question: Can I return the tent?}\n"
                "- {user: Grace, question: Which backpack fits a 15-inch laptop?}\n"
            )
        size = len(template_text(0).encode())
        # Baseline: `prefixlint check` of the same file, a fresh process each time.
        check = []
        for _ in range(runs):
            start = time.perf_counter()
            subprocess.run([binary, "check", "--format", "concise", path], cwd=root,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            check.append(time.perf_counter() - start)
        server = subprocess.Popen([binary, "server"], cwd=root, stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE)
        uri = "file://" + path

        def send(message):
            server.stdin.write(frame(message))
            server.stdin.flush()

        def diagnostics():
            while True:
                message = read(server.stdout)
                if message.get("method") == "textDocument/publishDiagnostics" and message["params"]["uri"] == uri:
                    return message["params"]["diagnostics"]

        send({"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"rootUri": "file://" + root, "capabilities": {}}})
        read(server.stdout)
        send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        start = time.perf_counter()
        send({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
            "uri": uri, "languageId": "jinja", "version": 1, "text": template_text(0)}}})
        found = diagnostics()
        first = time.perf_counter() - start
        codes = sorted({d.get("code", "error") for d in found})
        saves = []
        for n in range(1, runs + 1):
            text = template_text(n)
            start = time.perf_counter()
            send({"jsonrpc": "2.0", "method": "textDocument/didSave",
                  "params": {"textDocument": {"uri": uri}, "text": text}})
            diagnostics()
            saves.append(time.perf_counter() - start)
        send({"jsonrpc": "2.0", "id": 2, "method": "shutdown"})
        read(server.stdout)
        send({"jsonrpc": "2.0", "method": "exit"})
        server.wait(10)

    ms = lambda s: f"{1000 * s:.1f} ms"
    p90 = lambda xs: sorted(xs)[max(0, int(len(xs) * 0.9) - 1)]
    print(f"template: {size} bytes, 3 samples; findings: {', '.join(codes)}; {runs} runs each")
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; cores: {os.cpu_count()}")
    print(f"server, open -> diagnostics (tokenizer loaded here): {ms(first)}")
    print(f"server, save -> diagnostics: median {ms(statistics.median(saves))}, p90 {ms(p90(saves))}, max {ms(max(saves))}")
    print(f"baseline `prefixlint check` of the same file: median {ms(statistics.median(check))}, p90 {ms(p90(check))}")
    print(f"ratio save->diagnostics / check: {statistics.median(saves) / statistics.median(check):.2f}")
    print(f"target: save -> diagnostics <= 100 ms: {'met' if statistics.median(saves) <= 0.1 else 'NOT met'} (median)")


main()
