"""The bench-server client's own ceiling: events/s and streams per core, one process vs --workers 2 vs Ray.

Not a test: the numbers depend on the machine. A fast local server (a separate process, stdlib asyncio)
answers every request with ``--tokens`` SSE events at once, no sleep between them, so the client, not
the server, is what is timed. The same load (``--concurrency`` streams, ``--requests`` requests) is then
sent three ways with ``tokspeed bench-server``: one process, ``--workers 2`` and ``--ray`` on a local
two-node Ray cluster (``ray.cluster_utils.Cluster``, 1 CPU per node) with two actors.

Per way, from the run's own files (requests.jsonl, summary.json):
- events = the SSE chunks the client parsed (sum of ``chunks``); events/s = events / the phase's wall time.
- client CPU = ``client_cpu_s`` (every client process: the parent/driver and its workers/actors).
- events per client CPU-second: what one core of this client can parse (its ceiling per core).
- streams per core = events per CPU-second / ``--stream-tok-s`` (a stream decoding at that speed
  sends that many events per second when every event carries one token).
- busiest = the busiest client process's share of one core (``client_cpu_share``).
Ratios are against one process. The server shares the machine: on few cores it takes CPU the client
would otherwise get, so events/s is a floor; events per client CPU-second does not depend on it.

    python benchmarks/bench_client_ceiling.py [--requests 200] [--concurrency 16] [--tokens 256]
Results: benchmarks/RESULTS_client_ceiling.md.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

SERVER = r'''
import asyncio, json, sys

N = int(sys.argv[1])

def event(finish):
    return ("data: " + json.dumps({"id": "x", "object": "text_completion",
                                   "choices": [{"index": 0, "text": "t", "finish_reason": finish}]}) + "\n\n").encode()

EVENT, LAST = event(None), event("length")

async def handle(reader, writer):
    try:
        head = await reader.readuntil(b"\r\n\r\n")
        length = next((int(l.split(b":")[1]) for l in head.split(b"\r\n") if l.lower().startswith(b"content-length")), 0)
        await reader.readexactly(length)
        if head.startswith(b"GET"):
            writer.write(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        else:
            body = [b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"]
            body += [EVENT] * (N - 1) + [LAST]
            usage = {"prompt_tokens": 11, "completion_tokens": N, "total_tokens": 11 + N}
            body.append(("data: " + json.dumps({"id": "x", "choices": [], "usage": usage}) + "\n\n").encode())
            body.append(b"data: [DONE]\n\n")
            for piece in body:
                writer.write(piece)
                await writer.drain()
        await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()

async def main():
    server = await asyncio.start_server(handle, "127.0.0.1", 0, backlog=1024)
    print(server.sockets[0].getsockname()[1], flush=True)
    await server.serve_forever()

asyncio.run(main())
'''


def start_server(tokens: int) -> tuple[subprocess.Popen, str]:
    p = subprocess.Popen([sys.executable, "-c", SERVER, str(tokens)], stdout=subprocess.PIPE, text=True)
    port = p.stdout.readline().strip()
    return p, f"http://127.0.0.1:{port}"


def run_way(url: str, out: Path, args, extra: list[str]) -> dict:
    cmd = [sys.executable, "-m", "tokspeed", "bench-server", url, "--model", "fast", "--quiet", "--no-report",
           "--warmup", "0", "--concurrency", str(args.concurrency), "--requests", str(args.requests),
           "--max-tokens", str(args.tokens), "-o", str(out), *extra]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=900)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(extra) or 'one process'} failed ({done.returncode}): {done.stderr[-500:]}")
    summary = json.loads((out / "summary.json").read_text())
    recs = [json.loads(x) for x in (out / "requests.jsonl").read_text().splitlines()]
    recs = [r for r in recs if r.get("type") == "request"]
    phase = summary["phases"][0]
    events = sum(r.get("chunks") or 0 for r in recs)
    wall = max(r["end_s"] for r in recs) - min(r["start_s"] for r in recs)
    cpu = phase["client_cpu_s"]
    return {"ok": sum(1 for r in recs if r.get("ok")), "events": events, "wall_s": wall, "events_s": events / wall,
            "cpu_s": cpu, "events_per_cpu_s": events / cpu, "busiest": phase["client_cpu_share"],
            "streams_per_core": events / cpu / args.stream_tok_s}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--requests", type=int, default=200)
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--tokens", type=int, default=256, help="SSE events (one token each) per answer")
    ap.add_argument("--stream-tok-s", type=float, default=50.0,
                    help="decode speed of one stream for 'streams per core' (default 50 tok/s = 20 ms TPOT)")
    args = ap.parse_args()
    from ray.cluster_utils import Cluster

    server, url = start_server(args.tokens)
    cluster = None
    rows = {}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            rows["one process"] = run_way(url, Path(tmp, "one"), args, [])
            rows["--workers 2"] = run_way(url, Path(tmp, "workers"), args, ["--workers", "2"])
            cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
            cluster.add_node(num_cpus=1)
            cluster.wait_for_nodes(timeout=120)
            rows["--ray, 2 nodes"] = run_way(url, Path(tmp, "ray"), args,
                                             ["--ray", cluster.address, "--ray-actors", "2"])
    finally:
        server.kill()
        if cluster is not None:
            cluster.shutdown()
    base = rows["one process"]
    print(f"# client ceiling: {args.requests} requests x {args.tokens} events, concurrency {args.concurrency}; "
          f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    print("| way | ok | events | wall s | events/s | x | client CPU s | events/CPU-s | x | busiest | "
          f"streams/core @{args.stream_tok_s:g} tok/s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name, r in rows.items():
        print(f"| {name} | {r['ok']} | {r['events']} | {r['wall_s']:.2f} | {r['events_s']:,.0f} | "
              f"{r['events_s'] / base['events_s']:.2f} | {r['cpu_s']:.2f} | {r['events_per_cpu_s']:,.0f} | "
              f"{r['events_per_cpu_s'] / base['events_per_cpu_s']:.2f} | {r['busiest']:.0%} | "
              f"{r['streams_per_core']:,.0f} |")


if __name__ == "__main__":
    main()
