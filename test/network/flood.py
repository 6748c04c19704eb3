# Run inside a sandbox by the flood test, as an agent that wants the runner down would: N
# connections to the run proxy's socket, each left unfinished (`heads`: half a request head) or idle
# (`tunnels`: a whole CONNECT, then nothing), as many held at once as this process may open. Those the
# proxy closes are closed here too and counted. Prints one JSON line.
import json, select, socket, sys, time

SOCK = "/run/scifi-net/proxy.sock"
mode, total, target = sys.argv[1], int(sys.argv[2]), sys.argv[3]
request = ("GET http://%s/ HTTP/1.1\r\nX-Pad: " % target) if mode == "heads" else ("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (target, target))
held = {}
poller = select.poll()
stats = {"mode": mode, "sent": 0, "closed_by_proxy": 0, "established": 0, "refused_to_connect": 0, "held_max": 0}

def reap(wait_ms=0):
    for fd, ev in poller.poll(wait_ms):
        s = held.get(fd)
        if s is None:
            continue
        try:
            d = s.recv(4096, socket.MSG_DONTWAIT)
        except (BlockingIOError, InterruptedError):
            continue
        except OSError:
            d = b""
        if d.startswith(b"HTTP/1.1 200"):
            stats["established"] += 1
            continue
        if d:
            continue
        stats["closed_by_proxy"] += 1
        poller.unregister(fd)
        del held[fd]
        s.close()

began = time.time()
for i in range(total):
    s = socket.socket(socket.AF_UNIX)
    try:
        # Blocking: a full accept queue makes this wait, so every connection is sent.
        s.connect(SOCK)
    except OSError:
        stats["refused_to_connect"] += 1
        s.close()
        continue
    stats["sent"] += 1
    try:
        s.sendall(request.encode())
    except OSError:
        # Closed by the proxy as it was accepted (over the cap) before the request went out.
        stats["closed_by_proxy"] += 1
        s.close()
        continue
    held[s.fileno()] = s
    poller.register(s.fileno(), select.POLLIN | select.POLLHUP)
    stats["held_max"] = max(stats["held_max"], len(held))
    # Stay under this process's descriptor limit: reap what the proxy closed, else let go the oldest.
    if len(held) >= 15000 or i % 200 == 199:
        reap()
    if len(held) >= 15000:
        fd = next(iter(held))
        poller.unregister(fd)
        held.pop(fd).close()
# Hold what is still open a moment, as an idle client would, then let go.
end = time.time() + 3
while time.time() < end:
    reap(100)
stats["still_open"] = len(held)
for s in held.values():
    s.close()
stats["seconds"] = round(time.time() - began, 1)
print(json.dumps(stats))
