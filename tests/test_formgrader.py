"""``attention-course formgrader`` (autograder/formgrader.py): does it start Jupyter Server
with nbgrader's formgrader on the course, and serve the formgrader's API?"""

import json
import secrets
import socket
import sys
import time
import urllib.error
import urllib.request

import pytest
from nbgrader.api import Gradebook

from autograder import formgrader
from autograder.course import COURSE_ID, Course, venv_on_path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_the_command_names_the_extension_and_the_course(tmp_path):
    cmd = formgrader.command(Course(tmp_path), port=1234, ip="127.0.0.1", browser=False)
    assert cmd[:3] == [sys.executable, "-m", "jupyter_server"]
    assert f"--ServerApp.root_dir={tmp_path.resolve()}" in cmd
    assert "--ServerApp.jpserver_extensions=nbgrader.server_extensions.formgrader=True" in cmd
    assert "--ServerApp.open_browser=False" in cmd and "--ServerApp.port=1234" in cmd


@pytest.mark.slow
@pytest.mark.timeout(180)
@pytest.mark.filterwarnings("ignore::sqlalchemy.exc.SAWarning")  # nbgrader's autoflush
def test_it_serves_the_formgrader_api_on_the_course(tmp_path):
    """Does the server start, and does /formgrader/api/assignments list the course's
    gradebook (an assignment made here), with a token required?"""
    course = Course(tmp_path / "course")
    (course.root / "source" / "ch").mkdir(parents=True)  # the formgrader lists source/
    venv_on_path()
    with Gradebook(course.db_url, course_id=COURSE_ID) as gb:
        gb.add_assignment("ch")
    port, token = free_port(), secrets.token_hex(16)
    process = formgrader.start(course, port=port, ip="127.0.0.1", browser=False, token=token)
    url = f"http://127.0.0.1:{port}/formgrader/api/assignments"
    try:
        deadline, answer = time.monotonic() + 150, None
        while time.monotonic() < deadline and process.poll() is None:
            request = urllib.request.Request(url, headers={"Authorization": f"token {token}"})
            try:
                with urllib.request.urlopen(request, timeout=10) as reply:
                    answer = json.loads(reply.read())
                    break
            except (urllib.error.URLError, ConnectionError):
                time.sleep(0.5)
        assert answer is not None, f"no answer from the formgrader (exit code {process.poll()})"
        assert [a["name"] for a in answer] == ["ch"]
        try:  # without the token: sent to the login page, or refused
            with urllib.request.urlopen(url, timeout=10) as reply:
                assert "/login" in reply.geturl()
        except urllib.error.HTTPError as refused:
            assert refused.code in (401, 403)
    finally:
        process.terminate()
        process.wait(timeout=30)
