"""``symfonic serve`` as a user types it: the installed console script, not ``python -m``.

The script starts with its own directory on ``sys.path``, where ``python -m``
starts with the current one, so what the README promises about importing an
agent "from the current directory" is checked through the script itself. So is
what a port that cannot be bound does: one line of words, exit code 2, and no
start-up line announcing an address that never came up.
"""

from __future__ import annotations

import os
import socket
import subprocess
from pathlib import Path

import httpx
import pytest

from http_support import free_port
from serve_support import console_script, serving
from webhook_support import SECRET

pytestmark = pytest.mark.slow

SHOP = """\
from symfonic import SymfonicAgent
from symfonic.testing import ScriptedChatModel, reply

shop = SymfonicAgent(name="shop", model=ScriptedChatModel.from_script([reply("welcome")]))
"""


def _env(**extra: str) -> dict[str, str]:
    drop = {"PYTHONPATH", "SYMFONIC_STORE", "SYMFONIC_WEBHOOK_SECRET"}
    return {**{k: v for k, v in os.environ.items() if k not in drop}, **extra}


def _serve(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    command = [str(console_script()), "serve", "--store", f"sqlite:///{cwd / 's.db'}", *args]
    return subprocess.run(command, cwd=cwd, env=_env(SYMFONIC_API_KEYS=""),
                          capture_output=True, text=True, timeout=60, check=False)


def test_the_script_serves_an_agent_from_the_current_directory(tmp_path: Path) -> None:
    (tmp_path / "myapp").mkdir()
    (tmp_path / "myapp" / "__init__.py").write_text("")
    (tmp_path / "myapp" / "agents.py").write_text(SHOP)
    log = tmp_path / "server.log"
    with serving(f"sqlite:///{tmp_path / 'shop.db'}", log, "myapp.agents:shop", keys="",
                 env=_env(), cwd=tmp_path, program=[console_script()]) as server:
        session = httpx.post(f"{server.url}/v1/sessions", json={}).json()
        turn = httpx.post(f"{server.url}/v1/sessions/{session['session_id']}/turns",
                          json={"message": "hi"}, headers={"Accept": "application/json"})
    assert session["agent"] == "shop"
    assert turn.json()["answer"] == "welcome"
    assert "agents: shop (default shop)" in log.read_text().splitlines()[0]


def test_a_module_that_is_nowhere_is_one_line_naming_where_it_was_looked_for(
    tmp_path: Path,
) -> None:
    done = _serve("nowhere.agents:shop", "--port", str(free_port()), cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines() == [
        f"symfonic serve: cannot import 'nowhere.agents' from {tmp_path} or the installed "
        "packages: No module named 'nowhere'"
    ]


@pytest.mark.parametrize(
    ("port", "says"),
    [
        ("99999", "--port 99999 is not a port: use a whole number from 1 to 65535 "
                  "(or 0 for any free port)"),
        ("-1", "--port -1 is not a port: use a whole number from 1 to 65535 "
               "(or 0 for any free port)"),
        ("eighty", "--port eighty is not a port"),
    ],
)
def test_a_port_out_of_range_is_one_line_and_exit_2(port: str, says: str, tmp_path: Path) -> None:
    done = _serve("--port", port, cwd=tmp_path)
    assert (done.returncode, done.stdout) == (2, "")
    [line] = done.stderr.splitlines()
    assert line.startswith(f"symfonic serve: {says}")
    assert not (tmp_path / "s.db").exists()  # refused before anything was opened


def test_a_port_another_process_holds_is_one_line_exit_2_and_no_banner(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = _serve("--port", str(port), cwd=tmp_path)
    assert done.returncode == 2
    assert done.stdout == ""  # no start-up line announced an address that never came up
    assert done.stderr.splitlines() == [
        f"symfonic serve: cannot listen on http://127.0.0.1:{port}: another process is "
        f"already listening on port {port}; stop it, or pass --port with a free port"
    ]


def test_port_0_announces_the_port_the_system_chose(tmp_path: Path) -> None:
    process = subprocess.Popen(
        [str(console_script()), "serve", "--port", "0", "--store",
         f"sqlite:///{tmp_path / 's.db'}"],
        cwd=tmp_path, env=_env(SYMFONIC_API_KEYS="", PYTHONUNBUFFERED="1"),
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )
    try:
        assert process.stdout is not None
        banner = process.stdout.readline()
        url = banner.split(" | ")[0].removeprefix("symfonic serve: ")
        assert url.startswith("http://127.0.0.1:") and not url.endswith(":0"), banner
        assert httpx.get(f"{url}/v1/health", timeout=10).json()["status"] == "ok"
    finally:
        process.terminate()
        process.wait(timeout=15)


def test_the_banner_names_the_webhooks_without_their_credentials(tmp_path: Path) -> None:
    hook = "https://ops:hunter2@hooks.example:8443/symfonic?key=abc123#frag"
    log = tmp_path / "server.log"
    with serving(f"sqlite:///{tmp_path / 'w.db'}", log, "--webhook", hook,
                 "--webhook", "http://127.0.0.1:9/second", "--webhook-event", "pause.created",
                 "--webhook-event", "pause.expiring", keys="",
                 env=_env(SYMFONIC_WEBHOOK_SECRET=SECRET), cwd=tmp_path,
                 program=[console_script()]):
        pass
    banner = log.read_text().splitlines()[0]
    assert banner.endswith(
        " | webhooks: https://hooks.example:8443/symfonic, http://127.0.0.1:9/second "
        "(pause.created, pause.expiring)"
    )
    for secret in ("hunter2", "ops:", "abc123", "frag", SECRET):
        assert secret not in log.read_text()
