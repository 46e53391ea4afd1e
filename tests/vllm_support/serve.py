# Starts one vLLM OpenAI-compatible server (CPU) for the tests and keeps it only as long as
# the test run lives: it stops the whole server (API process and engine core, one process
# group) when the process `--exit-with` names is gone (the run's: nextest's runner, or the
# test binary), or else when its stdin closes, which the OS does when the test binary exits,
# panics or is killed. Prints `LOG path` at once, then `PORT n` when /health answers 200, or
# `FAILED why`.
#
# usage: python serve.py --model DIR --core N [--block-size N] [--kv-space GIB]
#                        [--num-gpu-blocks N] [--max-model-len N] [--timeout S] [--exit-with PID]
# Run it with the vLLM venv's python (scripts/setup.d/60-vllm.sh: $PREFIXLINT_TEST_VLLM_PYTHON).
import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

parser = argparse.ArgumentParser()
parser.add_argument("--model", required=True)
parser.add_argument("--core", required=True, help="the CPU core its engine binds to")
parser.add_argument("--block-size", type=int)
parser.add_argument("--kv-space", default="1", help="VLLM_CPU_KVCACHE_SPACE, GiB")
parser.add_argument("--num-gpu-blocks", type=int)
parser.add_argument("--max-model-len", type=int, default=4096)
parser.add_argument("--timeout", type=float, default=600)
parser.add_argument("--exit-with", type=int, help="stop when this process is gone")
args = parser.parse_args()

work = tempfile.mkdtemp(prefix="prefixlint-vllm-")
log_path = os.path.join(work, "server.log")
print(f"LOG {log_path}", flush=True)

with socket.socket() as probe:
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]

env = dict(os.environ)
env.update(
    HF_HUB_OFFLINE="1",
    TRANSFORMERS_OFFLINE="1",
    VLLM_TARGET_DEVICE="cpu",
    VLLM_CPU_KVCACHE_SPACE=args.kv_space,
    VLLM_CPU_OMP_THREADS_BIND=str(args.core),
    VLLM_CACHE_ROOT=os.path.join(work, "vllm-cache"),
    # /reset_prefix_cache, so one server serves several runs that must start cold.
    VLLM_SERVER_DEV_MODE="1",
    VLLM_NO_USAGE_STATS="1",
    DO_NOT_TRACK="1",
)
command = [
    sys.executable, "-m", "vllm.entrypoints.openai.api_server",
    "--model", args.model, "--served-model-name", "tiny",
    "--host", "127.0.0.1", "--port", str(port),
    "--max-model-len", str(args.max_model_len), "--dtype", "float32",
    "--enable-prefix-caching", "--enable-prompt-tokens-details", "--enforce-eager",
    # Chat requests that carry tools (the audit's logs): Qwen3 writes hermes-style calls.
    "--enable-auto-tool-choice", "--tool-call-parser", "hermes",
]
if args.block_size:
    command += ["--block-size", str(args.block_size)]
if args.num_gpu_blocks:
    command += ["--num-gpu-blocks-override", str(args.num_gpu_blocks)]
log = open(log_path, "wb")
server = subprocess.Popen(
    command, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
    start_new_session=True, cwd=work,
)


stopping = threading.Event()


def stop(*_):
    stopping.set()
    try:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
    except ProcessLookupError:
        pass
    # The engine core may outlive the API process by a moment; the group goes with it.
    try:
        os.killpg(server.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    # The log's tail was printed on failure; nothing else in the folder is worth keeping.
    shutil.rmtree(work, ignore_errors=True)
    os._exit(0)


def watch_stdin():
    while sys.stdin.buffer.read(65536):
        pass
    stop()


def watch_owner(pid):
    while True:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            stop()
        except PermissionError:
            pass
        time.sleep(1)


# stop() waits for the server, which the main thread may be waiting for already (holding
# Popen's wait lock): a SIGTERM runs it on a thread of its own, as the watchers do.
signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=stop, daemon=True).start())
if args.exit_with:
    threading.Thread(target=watch_owner, args=(args.exit_with,), daemon=True).start()
else:
    threading.Thread(target=watch_stdin, daemon=True).start()


def tail():
    with open(log_path, "rb") as f:
        return f.read()[-3000:].decode("utf-8", "replace").replace("\n", " | ")


deadline = time.monotonic() + args.timeout
while True:
    if server.poll() is not None:
        print(f"FAILED vLLM exited with {server.returncode}: {tail()}", flush=True)
        stop()
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as answer:
            if answer.status == 200:
                break
    except OSError:
        pass
    if time.monotonic() > deadline:
        print(f"FAILED no /health within {args.timeout:.0f} s: {tail()}", flush=True)
        stop()
    time.sleep(0.5)
print(f"PORT {port}", flush=True)
server.wait()
if stopping.is_set():
    time.sleep(60)  # stop() is under way on the stdin thread; it exits the process
try:
    print(f"FAILED vLLM exited with {server.returncode}: {tail()}", flush=True)
except OSError:
    pass
stop()
