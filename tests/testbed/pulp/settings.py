# pulpcore's settings for the testbed: PostgreSQL and every service on loopback (Network=host).
# PULP_* environment variables override any of these (dynaconf), e.g. PULP_CONTENT_ORIGIN.
import os

with open("/var/lib/pulp/secret_key") as f:
    SECRET_KEY = f.read().strip()
DB_ENCRYPTION_KEY = "/var/lib/pulp/database_fields.symmetric.key"
DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": os.environ.get("PGDATABASE", "pulp"),
        "USER": os.environ.get("PGUSER", "postgres"),
        "HOST": os.environ.get("PGHOST", "127.0.0.1"),
        "PORT": int(os.environ.get("PGPORT", "15432")),
    }
}
CONTENT_ORIGIN = os.environ.get("PULP_CONTENT_ORIGIN", "http://127.0.0.1:24816")
MEDIA_ROOT = "/var/lib/pulp/media"
WORKING_DIRECTORY = "/var/lib/pulp/tmp"
CACHE_ENABLED = False
ANALYTICS = False
