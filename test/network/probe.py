# Run inside a sandbox by the network tests: each probe prints one line, `OK <detail>` or `NO <why>`.
import json, os, socket, ssl, sys, urllib.error, urllib.request

def fetch(url, proxies=None):
    handlers = []
    if proxies is not None:
        handlers.append(urllib.request.ProxyHandler(proxies))
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    handlers.append(urllib.request.HTTPSHandler(context=ctx))
    opener = urllib.request.build_opener(*handlers)
    try:
        with opener.open(url, timeout=10) as r:
            return "OK " + r.read().decode()[:200]
    except urllib.error.HTTPError as e:
        return "NO %d %s" % (e.code, e.read().decode().strip()[:300])
    except Exception as e:
        return "NO " + repr(e)[:300]

def direct(host, port):
    # Connected is not reached: the capture accepts a direct connection only to answer its refusal.
    try:
        s = socket.create_connection((host, int(port)), timeout=5)
        s.settimeout(3)
        try:
            data = s.recv(600)
        except socket.timeout:
            data = b""
        s.close()
        if b"scifi network proxy" in data:
            return "NO " + data.decode(errors="replace").split("\r\n\r\n", 1)[-1].strip()[:300]
        return "OK connected"
    except Exception as e:
        return "NO " + repr(e)[:200]

def resolve(name):
    try:
        return "OK " + str(socket.getaddrinfo(name, 80))[:200]
    except Exception as e:
        return "NO " + repr(e)[:200]

def dns_udp(server, name):
    # A raw DNS query (a possible exfiltration channel) to a server of our choice.
    q = b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00" + b"".join(bytes([len(p)]) + p.encode() for p in name.split(".")) + b"\x00\x00\x01\x00\x01"
    try:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.settimeout(3)
        s.sendto(q, (server, 53))
        a, _ = s.recvfrom(512)
        rcode = a[3] & 0x0F if len(a) > 3 else -1
        return "OK answered" if rcode == 0 else "NO answered rcode %d" % rcode
    except Exception as e:
        return "NO " + repr(e)[:200]

def unix(path, request):
    try:
        s = socket.socket(socket.AF_UNIX)
        s.connect(path)
        s.sendall(request.encode())
        data = b""
        while True:
            d = s.recv(65536)
            if not d:
                break
            data += d
        first = data.decode(errors="replace").split("\r\n")[0]
        return ("OK " if " 200 " in first else "NO ") + data.decode(errors="replace")[:300]
    except Exception as e:
        return "NO " + repr(e)[:200]

cmd, args = sys.argv[1], sys.argv[2:]
if cmd == "fetch":
    print(fetch(args[0]))
elif cmd == "fetch-noproxy":
    print(fetch(args[0], {}))
elif cmd == "fetch-via":
    print(fetch(args[1], {"http": args[0], "https": args[0]}))
elif cmd == "direct":
    print(direct(args[0], args[1]))
elif cmd == "resolve":
    print(resolve(args[0]))
elif cmd == "dns":
    print(dns_udp(args[0], args[1]))
elif cmd == "unix":
    print(unix(args[0], args[1].replace("\\r\\n", "\r\n")))
elif cmd == "bench":
    # One big download and many small requests (each on a new connection); times from here.
    import time
    base, size, n = args[0], int(args[1]), int(args[2])
    opener = urllib.request.build_opener() if os.environ.get("HTTP_PROXY") else urllib.request.build_opener(urllib.request.ProxyHandler({}))
    t = time.perf_counter()
    got = 0
    with opener.open("%s/bytes/%d" % (base, size), timeout=120) as r:
        while True:
            d = r.read(1 << 20)
            if not d:
                break
            got += len(d)
    dt = time.perf_counter() - t
    lat = []
    for i in range(n):
        t0 = time.perf_counter()
        with opener.open("%s/small/%d" % (base, i), timeout=10) as r:
            r.read()
        lat.append(time.perf_counter() - t0)
    lat.sort()
    print(json.dumps({"bytes": got, "seconds": dt, "mbps": got / dt / 1e6, "latency_ms": lat[len(lat) // 2] * 1000}))
elif cmd == "serve":
    import http.server
    class H(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            b = b"hello from the peer sandbox"
            self.send_response(200); self.send_header("Content-Length", str(len(b))); self.end_headers(); self.wfile.write(b)
        def log_message(self, *a):
            pass
    http.server.ThreadingHTTPServer(("0.0.0.0", int(args[0])), H).serve_forever()
