# A test host for the network tests: HTTP on 8000, HTTPS on 8443 (cert in /certs), and a body of
# any size at /bytes/<n> (the bench). Started by the tests in a container or a namespace of their own.
import http.server, os, ssl, sys, threading

class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        if self.path.startswith("/bytes/"):
            n = int(self.path.split("/")[2])
            self.send_response(200)
            self.send_header("Content-Length", str(n))
            self.end_headers()
            chunk = b"x" * (1 << 20)
            while n > 0:
                k = min(n, len(chunk))
                self.wfile.write(chunk[:k])
                n -= k
            return
        body = ("hello from %s%s" % (self.headers.get("Host"), self.path)).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass

def serve(port, tls):
    s = http.server.ThreadingHTTPServer(("0.0.0.0", port), H)
    if tls:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain("/certs/cert.pem", "/certs/key.pem")
        s.socket = ctx.wrap_socket(s.socket, server_side=True)
    s.serve_forever()

if os.path.exists("/certs/cert.pem"):
    threading.Thread(target=serve, args=(8443, True), daemon=True).start()
print("test host ready", flush=True)
serve(int(sys.argv[1]) if len(sys.argv) > 1 else 8000, False)
