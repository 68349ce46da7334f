"""What every benchmark prints first: the machine it runs on and how busy it was."""

from __future__ import annotations

import os
import platform


def print_machine(note: str = "") -> None:
    print(
        f"machine: {os.cpu_count()} CPUs, {platform.platform()}, Python {platform.python_version()}"
    )
    print(f"load average before: {os.getloadavg()}{note}")
