"""Creates a Pulp file repository every 100 ms through the REST API until STOP_FILE exists (or
MAX_SECONDS pass), and appends the name of each one the API acknowledged (201) to ACKED, one a
line, flushed at once. Failed requests (the API down during a restart) are counted, not retried.

Usage: PULP_PASSWORD=... pulp_writer.py API_URL USER ACKED STOP_FILE [MAX_SECONDS]
(the password comes from the environment, so it is in no file and no command line)."""

import base64
import json
import os
import sys
import time
import urllib.error
import urllib.request


def main():
    api, user, acked_path, stop_file = sys.argv[1:5]
    max_seconds = float(sys.argv[5]) if len(sys.argv) > 5 else 900
    token = base64.b64encode(f"{user}:{os.environ['PULP_PASSWORD']}".encode()).decode()
    url = api.rstrip("/") + "/pulp/api/v3/repositories/file/file/"
    t0 = time.monotonic()
    n = failed = 0
    with open(acked_path, "a") as acked:
        while not os.path.exists(stop_file) and time.monotonic() - t0 < max_seconds:
            name = f"w-{os.getpid()}-{n}"
            n += 1
            req = urllib.request.Request(
                url,
                data=json.dumps({"name": name}).encode(),
                headers={"Content-Type": "application/json", "Authorization": f"Basic {token}"},
            )
            try:
                with urllib.request.urlopen(req, timeout=5) as r:
                    if r.status == 201:
                        acked.write(name + "\n")
                        acked.flush()
                    else:
                        failed += 1
            except (urllib.error.URLError, OSError):
                failed += 1
            time.sleep(0.1)
    print(json.dumps({"tried": n, "failed": failed}))


if __name__ == "__main__":
    main()
