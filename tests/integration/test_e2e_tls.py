#!/usr/bin/env python3
"""End to end: TLS and basic auth on the HTTP port from a web config in the Prometheus exporter
toolkit's format. Certificates from a CA made here with openssl; curl and a real Prometheus
(tls_config, basic_auth) as clients; two daemons in two network namespaces probing each other
over HTTPS (one of them requiring client certificates); certificate rotation without a restart;
a broken edit that changes nothing; --check-config on bad web configs."""

import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse
import warnings

sys.path.insert(0, os.path.dirname(__file__))
import rwtest  # noqa: E402

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    import crypt  # noqa: E402  (libxcrypt's bcrypt; the module is in Debian 12's Python 3.11)


def openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


class Pki:
    """A CA and the certificates it signs, in `d`."""

    def __init__(self, d, name):
        self.d, self.name = d, name
        openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2",
                "-subj", f"/CN={name} CA", "-keyout", f"{name}-ca.key", "-out", f"{name}-ca.crt", cwd=d)
        self.ca = os.path.join(d, f"{name}-ca.crt")

    def issue(self, cn, sans, out=None, client=False):
        out = out or cn
        openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", f"/CN={cn}",
                "-keyout", f"{out}.key", "-out", f"{out}.csr", cwd=self.d)
        with open(os.path.join(self.d, f"{out}.ext"), "w") as f:
            f.write(f"subjectAltName={','.join(sans)}\n" if sans else "")
            f.write(f"extendedKeyUsage={'clientAuth' if client else 'serverAuth'}\n")
        openssl("x509", "-req", "-in", f"{out}.csr", "-CA", f"{self.name}-ca.crt", "-CAkey", f"{self.name}-ca.key",
                "-set_serial", str(secrets.randbelow(2**60)), "-days", "2", "-extfile", f"{out}.ext",
                "-out", f"{out}.crt", cwd=self.d)
        return os.path.join(self.d, f"{out}.crt"), os.path.join(self.d, f"{out}.key")


def serial_of(path):
    r = rwtest.sh("openssl", "x509", "-noout", "-serial", "-in", path)
    return r.stdout.strip().split("=", 1)[1].upper()


def served_serial(ns, port, ca):
    """The serial of the certificate a fresh handshake to 127.0.0.1:port in `ns` presents."""
    r = ns.run("sh", "-c", f"openssl s_client -connect 127.0.0.1:{port} -CAfile {ca} </dev/null 2>/dev/null "
               "| openssl x509 -noout -serial", check=False)
    return r.stdout.strip().split("=", 1)[1].upper() if "=" in r.stdout else ""


def web_config(path, cert, key, users, extra_tls="", headers=True):
    with open(path, "w") as f:
        f.write(f"tls_server_config:\n  cert_file: {cert}\n  key_file: {key}\n{extra_tls}")
        if headers:
            f.write("http_server_config:\n  headers:\n    Strict-Transport-Security: max-age=31536000\n")
        f.write("basic_auth_users:\n" + "".join(f"  {u}: '{h}'\n" for u, h in users.items()))


def daemon_config(path, token_file, web, peers="", cluster="", data_port=9880):
    with open(path, "w") as f:
        f.write(f'[daemon]\ninterval = "1s"\nweb_config_file = "{web}"\n'
                f'[probes]\ntoken_file = "{token_file}"\ndata_port = {data_port}\nlatency_threshold = "1s"\n'
                'enabled = ["tcp_lat"]\n'
                '[probes.tcp_lat]\ninterval = "1s"\njitter = "0s"\ncount = 50\ntimeout = "3s"\n'
                f'[cluster]\nring_successors = 0\nrotating_peers = 0\n{cluster}' + peers)


peer = rwtest.peer_toml


latest = rwtest.latest_probe


def main():
    rwtest.require_root()
    for tool in ("curl", "openssl", "prometheus"):
        rwtest.require(shutil.which(tool), f"needs {tool}")
    t = rwtest.Results()
    work = tempfile.mkdtemp(prefix="rw-tls-")
    os.chmod(work, 0o755)
    token = os.path.join(work, "token")
    with open(token, "w") as f:
        f.write(secrets.token_hex(32) + "\n")
    os.chmod(token, 0o600)
    password = secrets.token_urlsafe(12)
    pw_file = os.path.join(work, "password")
    with open(pw_file, "w") as f:
        f.write(password)
    wrong_pw = os.path.join(work, "wrong-password")
    with open(wrong_pw, "w") as f:
        f.write("not-" + password)
    users = {"prometheus": crypt.crypt(password, crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=1 << 10))}

    pki = Pki(work, "cluster")
    other = Pki(work, "other")  # a CA nobody here trusts
    a_crt, a_key = pki.issue("node-a", ["IP:10.78.0.1", "IP:127.0.0.1", "DNS:localhost"])
    b_crt, b_key = pki.issue("node-b", ["IP:10.78.0.2", "IP:127.0.0.1"])
    cl_crt, cl_key = pki.issue("prometheus", [], client=True)
    port_a, port_b, port_c, port_prom = 19931, 19932, 19933, 19934

    # ---- --check-config holds the web config to the server's own loading
    bad = os.path.join(work, "bad-web.yml")
    web_config(bad, a_crt, b_key, users)
    r = subprocess.run([os.environ.get("ROCEWATCHD", "build/daemon/rocewatchd"), "--web-config-file", bad,
                        "--check-config"], capture_output=True, text=True)
    t.check(r.returncode == 1 and f"{bad}: tls_server_config.key_file:" in r.stderr and "is not the key of" in r.stderr,
            f"--check-config: a key that is not the certificate's fails, naming file and key ({r.stderr.strip()[:160]})")
    with open(bad, "w") as f:
        f.write(f"tls_server_config:\n  cert_file: {work}/missing.crt\n  key_file: {a_key}\n"
                f"  client_ca_file: {work}/missing-ca.crt\n  client_auth_type: RequireAndVerifyClientCert\n")
    cfg_bad = os.path.join(work, "bad.toml")
    with open(cfg_bad, "w") as f:
        f.write(f'[daemon]\nweb_config_file = "{bad}"\n[probes]\ntoken_file = "{work}/no-token"\n')
    r = subprocess.run([os.environ.get("ROCEWATCHD", "build/daemon/rocewatchd"), "--config", cfg_bad,
                        "--check-config"], capture_output=True, text=True)
    t.check(r.returncode == 1 and "tls_server_config.cert_file: cannot load" in r.stderr
            and "tls_server_config.client_ca_file: cannot load" in r.stderr and "no-token" in r.stderr,
            f"--check-config names every file that does not load in one run: certificate, client CA, token "
            f"({r.stderr.strip()[:300]})")
    with open(bad, "w") as f:
        f.write(f"tls_server_config:\n  cert_file: {a_crt}\n  key_file: {a_key}\n  client_auth: Require\n")
    r = subprocess.run([os.environ.get("ROCEWATCHD", "build/daemon/rocewatchd"), "--web-config-file", bad,
                        "--check-config"], capture_output=True, text=True)
    t.check(r.returncode == 1 and f"{bad}:4: tls_server_config.client_auth: unknown key" in r.stderr,
            f"--check-config: an unknown key names file, line and key ({r.stderr.strip()[:100]})")

    web_a, web_b = os.path.join(work, "web-a.yml"), os.path.join(work, "web-b.yml")
    web_config(web_a, a_crt, a_key, users)
    r = subprocess.run([os.environ.get("ROCEWATCHD", "build/daemon/rocewatchd"), "--web-config-file", web_a,
                        "--check-config"], capture_output=True, text=True)
    t.check(r.returncode == 0 and f"{web_a}: ok" in r.stdout,
            f"--check-config says the web config it checked is ok ({r.stdout.strip()[:160]})")
    # B asks every client for a certificate from the cluster CA: peers and Prometheus show one.
    web_config(web_b, b_crt, b_key, users,
               extra_tls=f"  client_ca_file: {pki.ca}\n  client_auth_type: RequireAndVerifyClientCert\n",
               headers=False)
    cfg_a, cfg_b, cfg_c = (os.path.join(work, n) for n in ("a.toml", "b.toml", "c.toml"))
    https_b = (f'peer_scheme = "https"\npeer_ca_file = "{pki.ca}"\npeer_cert_file = "{cl_crt}"\n'
               f'peer_key_file = "{cl_key}"\n')
    daemon_config(cfg_a, token, web_a, peer("node-b", f"10.78.0.2:{port_b}", "10.78.0.1", "10.78.0.2"), https_b)
    daemon_config(cfg_b, token, web_b)
    # C trusts another CA: its hello to B must fail as a TLS error, not hang or pass.
    daemon_config(cfg_c, token, web_a, peer("node-b", f"10.78.0.2:{port_b}", "10.78.0.1", "10.78.0.2"),
                  f'peer_scheme = "https"\npeer_ca_file = "{other.ca}"\npeer_cert_file = "{cl_crt}"\n'
                  f'peer_key_file = "{cl_key}"\n', data_port=9881)

    auth_a = ["--cacert", pki.ca, "-u", f"prometheus:{password}"]
    auth_b = auth_a + ["--cert", cl_crt, "--key", cl_key]
    with rwtest.Netns("ta") as na, rwtest.Netns("tb") as nb:
        na.ip("link", "add", "rail0a", "type", "veth", "peer", "name", "rail0b", "netns", nb.name)
        na.ip("addr", "add", "10.78.0.1/24", "dev", "rail0a")
        nb.ip("addr", "add", "10.78.0.2/24", "dev", "rail0b")
        na.ip("link", "set", "rail0a", "up")
        nb.ip("link", "set", "rail0b", "up")
        time.sleep(0.5)
        b = rwtest.Daemon(netns=nb, config=cfg_b, port=port_b, extra=("--listen", f"0.0.0.0:{port_b}"),
                          curl_args=auth_b)
        a = rwtest.Daemon(netns=na, config=cfg_a, port=port_a, extra=("--listen", f"0.0.0.0:{port_a}"),
                          curl_args=auth_a)
        c = rwtest.Daemon(netns=na, config=cfg_c, port=port_c, extra=("--listen", f"0.0.0.0:{port_c}"),
                          curl_args=auth_a)
        with b, a, c:
            t.check(True, "three daemons serve HTTPS with basic auth and answer /readyz to a user")
            libs = rwtest.mapped_libraries(a.proc.pid)
            t.check("libssl.so.3" in libs, "with TLS configured, OpenSSL is loaded (on first use)")
            t.check(any(lib.startswith("libcrypt.so.1") for lib in libs),
                    "with basic auth checked once, libcrypt is loaded (on first use)")

            def curl(*args, url):
                r = na.run("curl", "-sS", "-i", "--max-time", "5", *args, url, check=False)
                return r.returncode, r.stdout + r.stderr

            base_a = f"https://127.0.0.1:{port_a}"
            rc, out = curl("--cacert", pki.ca, url=base_a + "/metrics")
            t.check(rc == 0 and out.startswith("HTTP/1.1 401") and 'WWW-Authenticate: Basic realm="rocewatch"' in out,
                    "no credentials: 401 with WWW-Authenticate: Basic")
            rc, out = curl("--cacert", pki.ca, "-u", "prometheus:wrong", url=base_a + "/metrics")
            t.check(out.startswith("HTTP/1.1 401") and "wrong user name or password" in out,
                    "a wrong password: 401")
            rc, out = curl(*auth_a, url=base_a + "/metrics")
            t.check(out.startswith("HTTP/1.1 200") and "rocewatch_build_info" in out,
                    "the right user and password: 200 with the metrics")
            t.check("Strict-Transport-Security: max-age=31536000" in out, "the web config's header is on the answer")
            rc, out = curl("--cacert", pki.ca, "-X", "DELETE", url=base_a + "/api/v1/status")
            t.check(out.startswith("HTTP/1.1 401") and "Allow:" not in out
                    and "Strict-Transport-Security: max-age=31536000" in out and "X-Content-Type-Options: nosniff" in out,
                    f"a method refused before routing, without credentials: 401 (no Allow to say the path exists), "
                    f"with the same headers ({out[:300]!r})")
            rc, out = curl(*auth_a, "-X", "DELETE", url=base_a + "/api/v1/status")
            t.check(out.startswith("HTTP/1.1 405") and "Allow: GET, HEAD" in out,
                    f"the same with credentials verified before: 405 and what the path allows ({out[:200]!r})")
            rc, out = curl(url=f"http://127.0.0.1:{port_a}/metrics")
            t.check("400 Bad Request" in out and "Client sent an HTTP request to an HTTPS server." in out,
                    "plain HTTP to the HTTPS port is told so (400), not reset")
            rc, out = curl(url=base_a + "/metrics")
            t.check(rc == 60, f"curl without the CA does not trust the certificate (curl exit {rc})")
            rc, out = curl("--cacert", pki.ca, "-u", f"prometheus:{password}", url=f"https://10.78.0.2:{port_b}/healthz")
            t.check(rc != 0 or not out.startswith("HTTP/1.1 200"),
                    f"B requires a client certificate: none, no answer (curl exit {rc})")
            rc, out = curl(*auth_b, url=f"https://10.78.0.2:{port_b}/healthz")
            t.check(out.startswith("HTTP/1.1 200"), "B with a client certificate from the cluster CA: 200")

            # ---- peers over HTTPS: A reaches B (client certificate, token through B's basic auth)
            def ok():
                r = latest(a, "node-b", "tcp_lat")
                return r if r and r["success"] else None
            t.within(ok, 20, "A's tcp_lat to B over an HTTPS control channel succeeds")
            def c_hello():
                for p in c.json("/api/v1/peers")["peers"]:
                    if p["name"] == "node-b" and p["hello_error"]:
                        return p["hello_error"]
                return None
            t.within(c_hello, 20, "C, which trusts another CA, cannot say hello to B")
            t.check(c_hello() == "tls_error", f"... and the reason is tls_error ({c_hello()})")
            code, body = a.get("/probe?target=node-b&module=tcp_lat")
            t.check(code == 200 and re.search(r"^probe_success 1$", body, re.M) is not None,
                    "a basic auth user of the web config may run /probe")
            # ... but is no peer daemon: the peer routes take the token only.
            rc, out = curl(*auth_a, url=base_a + "/api/v1/peer/hello")
            t.check(out.startswith("HTTP/1.1 401"), f"a basic auth user gets 401 from /api/v1/peer/hello ({out[:80]!r})")

            # ---- a real Prometheus: tls_config and basic_auth, as for any exporter-toolkit exporter
            prom_yml = os.path.join(work, "prometheus.yml")
            with open(prom_yml, "w") as f:
                f.write(f"""global:
  scrape_interval: 2s
  scrape_timeout: 2s
scrape_configs:
  - job_name: rocewatch
    scheme: https
    tls_config: {{ca_file: {pki.ca}, cert_file: {cl_crt}, key_file: {cl_key}}}
    basic_auth: {{username: prometheus, password_file: {pw_file}}}
    static_configs:
      - targets: ['127.0.0.1:{port_a}', '10.78.0.2:{port_b}']
  - job_name: wrong_password
    scheme: https
    tls_config: {{ca_file: {pki.ca}}}
    basic_auth: {{username: prometheus, password_file: {wrong_pw}}}
    static_configs:
      - targets: ['127.0.0.1:{port_a}']
""")
            prom = subprocess.Popen(["ip", "netns", "exec", na.name, "prometheus", f"--config.file={prom_yml}",
                                     f"--storage.tsdb.path={work}/tsdb", f"--web.listen-address=127.0.0.1:{port_prom}"],
                                    stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "prom.log"), "w"))
            try:
                def query(q):
                    r = na.run("curl", "-sS", "--max-time", "5", f"http://127.0.0.1:{port_prom}/api/v1/query?" +
                               urllib.parse.urlencode({"query": q}), check=False)
                    try:
                        res = json.loads(r.stdout)["data"]["result"]
                    except (ValueError, KeyError):
                        return {}
                    return {(x["metric"]["job"], x["metric"]["instance"]): float(x["value"][1]) for x in res}
                t.within(lambda: (lambda v: len(v) == 3 and min(v.values()) >= 3)(query("count_over_time(up[1m])")),
                         60, "Prometheus scraped every target at least 3 times")
                ups = query("min_over_time(up[1m])")
                t.check(ups.get(("rocewatch", f"127.0.0.1:{port_a}")) == 1.0 and
                        ups.get(("rocewatch", f"10.78.0.2:{port_b}")) == 1.0,
                        f"up is 1 in every scrape with tls_config and basic_auth, A and B (client cert) ({ups})")
                t.check(ups.get(("wrong_password", f"127.0.0.1:{port_a}")) == 0.0,
                        "up is 0 for the job with the wrong password")
            finally:
                prom.terminate()
                prom.wait(timeout=10)

            # ---- certificate rotation: new files in place, served at the next handshake
            old = served_serial(na, port_a, pki.ca)
            t.check(old == serial_of(a_crt), f"A serves its certificate (serial {old})")
            new_crt, new_key = pki.issue("node-a", ["IP:10.78.0.1", "IP:127.0.0.1"], out="node-a-next")
            shutil.copy(new_key, a_key + ".tmp")
            shutil.copy(new_crt, a_crt + ".tmp")
            os.replace(a_key + ".tmp", a_key)
            os.replace(a_crt + ".tmp", a_crt)
            t.within(lambda: served_serial(na, port_a, pki.ca) == serial_of(new_crt), 10,
                     "a rotated certificate is served without a restart")

            # ---- a broken edit: logged, refused, the running config stays
            with open(web_a, "a") as f:
                f.write("  nobody: [not, a, hash\n")
            def refused():
                a.get("/healthz")  # the web config is looked at when requests come, at most once a second
                with open(a.log.name) as f:
                    return "web config not reloaded" in f.read()
            t.within(refused, 10, "a broken web config edit is logged as refused")
            code, _ = a.get("/healthz")
            t.check(code == 200, "... and the running config still serves the same user")
            text = a.get("/metrics")[1]
            m = re.search(r'^rocewatch_http_rejected_total\{reason="tls_handshake"\} (\d+)', text, re.M)
            t.check(m is not None and int(m.group(1)) >= 1,
                    f"failed handshakes are counted ({m.group(0) if m else 'no series'})")
            m = re.search(r'^rocewatch_web_config_last_reload_successful (\S+)', text, re.M)
            t.check(m is not None and m.group(1) == "0",
                    f"... and shown in /metrics, where an alert sees it ({m.group(0) if m else 'no series'})")
    shutil.rmtree(work, ignore_errors=True)
    t.finish()


if __name__ == "__main__":
    main()
