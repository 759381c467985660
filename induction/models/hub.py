"""Whether the Hugging Face hub can be reached: the one probe behind every path that may
download (hub model names, the zoo's hub repository), so offline use fails in one line at once
instead of after a library's retries."""

from __future__ import annotations

import os
import socket
from urllib.parse import urlparse

#: Seconds to wait for a TCP connection to the hub before calling it unreachable.
HUB_PROBE_TIMEOUT_S = 3.0


def hub_offline_env() -> bool:
    """``$HF_HUB_OFFLINE`` asks for no network at all."""
    return os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on")


def hub_reachable() -> bool:
    """A TCP connection to ``$HF_ENDPOINT`` (default huggingface.co) opens in time."""
    endpoint = os.environ.get("HF_ENDPOINT", "https://huggingface.co")
    url = urlparse(endpoint)
    port = url.port or (443 if url.scheme == "https" else 80)
    try:
        with socket.create_connection((url.hostname, port), timeout=HUB_PROBE_TIMEOUT_S):
            return True
    except OSError:
        return False
