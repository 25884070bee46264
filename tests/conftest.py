import atexit
import os
import shutil
import tempfile

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci", max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("dev", max_examples=10, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

# The tuner's cache (hardware fingerprint, remembered trials, local models) in a directory of the
# test session's own, which subprocesses inherit: what an earlier run or the developer's own
# streams left in ~/.cache/rhuber must not choose plans here, nor a test's trials there.
# Removed when the session's process ends, so runs do not pile directories up in /tmp.
os.environ["RHUBER_CACHE_DIR"] = tempfile.mkdtemp(prefix="rhuber-tests-cache-")
atexit.register(shutil.rmtree, os.environ["RHUBER_CACHE_DIR"], ignore_errors=True)
