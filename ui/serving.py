"""Where the page listens, checked in code: loopback only, unless a launch flag says otherwise.

ui/.streamlit/config.toml asks for 127.0.0.1, but Streamlit reads the script-level config beside
the path it was given: `ln -s .../ui/app.py app.py; streamlit run app.py` skipped it, and a
careless `~/.streamlit/config.toml` (`address = "0.0.0.0"`, `showErrorDetails = "full"`) then
exposed the chat and its tracebacks to the network. So the script itself refuses an address
that is not loopback, unless it came from `--server.address` or `STREAMLIT_SERVER_ADDRESS` (a
deliberate choice at launch, as ui/.streamlit/config.toml documents), and never shows a
traceback on the page whatever a config file says.
"""

from __future__ import annotations

import ipaddress
import os
import sys

from streamlit import config

# Where Streamlit records an option set by a flag or by its environment variable.
_EXPLICIT = ("command-line argument or environment variable", "environment variable")
REFUSED_EXIT = 2


def is_loopback(address: str) -> bool:
    """127.0.0.0/8, ::1, `localhost` or a Unix socket: nothing another machine can reach."""
    if address == "localhost" or address.startswith("unix://"):
        return True
    try:
        return ipaddress.ip_address(address.strip("[]")).is_loopback
    except ValueError:
        return False


def refused_address() -> str | None:
    """Why the configured address is refused (one line), or None when it may be served.

    An empty address is Streamlit's default: every interface. Only a real server listens:
    under AppTest (no server mode) nothing is refused.
    """
    if getattr(config, "_server_mode", None) is None:
        return None
    address = str(config.get_option("server.address") or "")
    if is_loopback(address):
        return None
    where = config.get_where_defined("server.address")
    if where in _EXPLICIT:
        return None
    shown = address or "every interface"
    return (
        f"refusing to listen on {shown} (set in {where}): this app serves 127.0.0.1 only; "
        "start it with `python -m ui` (as `make run` does), adding `--server.address ADDRESS` "
        "to expose it on purpose"
    )


def enforce_loopback() -> None:
    """Stop the process (one line on stderr, exit 2) if it listens beyond loopback unasked;
    keep tracebacks off the page. Called first thing by every run of ui/app.py."""
    reason = refused_address()
    if reason is not None:
        print(f"ui/app.py: {reason}", file=sys.stderr, flush=True)
        os._exit(REFUSED_EXIT)  # from the script's thread: sys.exit would end only the run
    if config.get_option("client.showErrorDetails") not in ("type", "none"):
        config.set_option("client.showErrorDetails", "type")
