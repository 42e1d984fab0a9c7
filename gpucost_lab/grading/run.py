"""One submission, run: the learner's cells in the sandboxed kernel, the tests in this process (:mod:`.checks`)."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import queue
import stat
import subprocess
import tempfile
import time
from pathlib import Path

import zmq
from jupyter_client.asynchronous import AsyncKernelClient
from jupyter_client.channels import AsyncZMQSocketChannel
from nbclient import NotebookClient
from nbformat.v4 import new_output, output_from_msg
from traitlets import default

from gpucost_lab.course.variants import LEARNER_ENV
from gpucost_lab.grading import answers as _answers
from gpucost_lab.grading import confine, links, wire
from gpucost_lab.grading import kernel_command as _command
from gpucost_lab.grading import sandbox as _sandbox
from gpucost_lab.grading.checks import (
    Checks,
    LearnerError,
    error_output,
    is_test,
    is_trusted_setup,
    visible_source,
)

KERNEL_NAME = "gpucost-sandbox"
_ANSWERS = "__import__('gpucost_lab.grading.answers', fromlist=['send'])"
_TIMEOUT_MARK = "gpucost_cell_timeout"  # in the execute reply nbclient makes up when a cell reaches its time limit
MAX_OUTPUT_CHARS = 20_000  # per output of a learner's cell, kept in the graded notebook
MAX_CELL_OUTPUT_CHARS = 10 * MAX_OUTPUT_CHARS  # all of one cell's outputs; past it, one note
MAX_NOTEBOOK_OUTPUT_CHARS = 2_000_000  # all the notebook's outputs kept, as the grader holds them
MAX_CELLS = 1000  # cells beyond this are not run; a lab has a few dozen
MAX_MESSAGE_BYTES = wire.MAX_MESSAGE_BYTES


class CappedChannel(AsyncZMQSocketChannel):
    """A channel that reads each message within ``wire.MAX_FRAMES`` frames and :data:`MAX_MESSAGE_BYTES` bytes
    (:func:`.wire.read_frames`) and drops one over them, or one the session cannot read, as if it had not come. A
    reply whose content is over ``wire.MAX_MESSAGE_VALUES`` values arrives with an error as its content (so the
    request it answers fails at once); any other message with such a content is dropped."""

    async def _recv(self, **kwargs):
        while True:
            frames = await wire.read_frames(self.socket)
            message = _readable(self.session, frames) if frames is not None else None
            if message is not None:
                return message
            if not await self.socket.poll(0):
                raise queue.Empty


def _readable(session, frames: list[bytes]) -> dict | None:
    """The message of ``frames``, its content read within :mod:`.wire`'s bounds; None where it cannot be read."""
    try:
        message = session.deserialize(session.feed_identities(frames)[1], content=False)
        packed, message["content"] = message["content"], None
        message["content"] = wire.unpack(packed)
    except wire.WireError as why:
        if not str(message.get("msg_type", "")).endswith("_reply"):
            return None
        message["content"] = {"status": "error", "ename": "WireError", "evalue": str(why)}
    except Exception:  # noqa: BLE001  (a forged or broken message: as if it had not come)
        return None
    return message if isinstance(message.get("content"), dict) else None


class CappedClient(AsyncKernelClient):
    """The grader's client of the learner's kernel: ZeroMQ refuses any frame over :data:`MAX_MESSAGE_BYTES`, every
    channel reads within :mod:`.wire`'s bounds, and the session parses each part with :func:`.wire.unpack`."""

    shell_channel_class = CappedChannel
    iopub_channel_class = CappedChannel
    stdin_channel_class = CappedChannel
    control_channel_class = CappedChannel

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.session.unpack = wire.unpack  # the kernel manager's session too: it reads nothing else

    @default("context")
    def _capped_context(self):
        context = super()._context_default()
        context.setsockopt(zmq.MAXMSGSIZE, MAX_MESSAGE_BYTES)
        return context


class CappedNotebookClient(NotebookClient):
    """nbclient, keeping of the learner's outputs only what :data:`MAX_OUTPUT_CHARS`, :data:`MAX_CELL_OUTPUT_CHARS`
    and :data:`MAX_NOTEBOOK_OUTPUT_CHARS` allow, as they arrive; widget messages and display updates (which would
    grow an output already kept) are not kept at all."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, store_widget_state=False, **kwargs)
        self._kept_chars: dict[int, int] = {}

    def output(self, outs, msg, display_id, cell_index):
        try:
            out = output_from_msg(msg)
        except ValueError:
            return None
        if self.clear_before_next_output:
            outs[:] = []
            self.clear_before_next_output = False
        out = _truncate([out])[0]
        size = len(json.dumps(out))
        cell = self._kept_chars.get(cell_index, 0)
        if cell > MAX_CELL_OUTPUT_CHARS or sum(self._kept_chars.values()) > MAX_NOTEBOOK_OUTPUT_CHARS:
            return None  # the note below is kept already
        self._kept_chars[cell_index] = cell + size
        if cell + size > MAX_CELL_OUTPUT_CHARS or sum(self._kept_chars.values()) > MAX_NOTEBOOK_OUTPUT_CHARS:
            self._kept_chars[cell_index] = MAX_CELL_OUTPUT_CHARS + 1
            out = new_output("stream", name="stdout", text="[more output of this cell was not kept when graded]\n")
        outs.append(out)
        return out

    def process_message(self, msg, cell, cell_index):
        """nbclient's, for a message of any shape: one it cannot read is skipped, never an error of the grader's."""
        try:
            return super().process_message(msg, cell, cell_index)
        except (KeyError, TypeError, AttributeError, ValueError):
            return None

    def handle_comm_msg(self, outs, msg, cell_index):
        return None

    def _update_display_id(self, display_id, msg):
        return None


class _Kernel:
    """The learner's kernel as the grader reaches it: cells run through nbclient, answers as plain JSON."""

    def __init__(self, client, timeout_s: int):
        self.client, self.timeout_s, self.dead = client, timeout_s, False
        self.stopped = "the kernel had stopped"  # why a dead kernel gives no answers, as the tests' messages say

    def warm_up(self, wait_s: float) -> str | None:
        """Load the answer module in the kernel, before the learner's first cell, allowing ``wait_s``.

        It imports the gpucost_lab package (seconds, more on a busy machine): left to the first answer fetched, that
        import would count against the per-cell limit, and an honest learner could lose every point to a slow
        machine. None once loaded, else why not."""
        text, why = self._evaluate(f"{_ANSWERS}.send({{}}, '')", wait_s)
        return None if text is not None else why

    def probe(self, wait_s: float) -> bool:
        """Whether the kernel still answers (a trivial request, within ``wait_s``); if not, it is marked dead.

        Asked after a cell reached its time limit: code that breaks the kernel itself (a builtin replaced, say)
        leaves it unable to reply to anything, and the later cells are then not sent to it."""
        self._evaluate("''", wait_s)
        if self.dead:
            self.stopped = (
                f"the kernel had stopped answering: no reply within {wait_s:g} s after a cell reached "
                f"the time limit, so the cells after it were not run"
            )
        return not self.dead

    def _evaluate(self, expression: str, wait_s: float | None = None) -> tuple[str | None, str]:
        """(text, "") or (None, why) for one expression evaluated in the learner's namespace, waiting at most
        ``wait_s`` (default: the per-cell limit) for the reply: its value is base64 text, decoded here without
        evaluating anything (:func:`.wire.answer_text`)."""
        from jupyter_core.utils import run_sync

        if self.dead:
            return None, self.stopped
        wait_s = self.timeout_s if wait_s is None else wait_s

        async def ask():
            kc = self.client.kc
            msg_id = kc.execute("", silent=True, store_history=False, user_expressions={"a": expression})
            deadline = time.monotonic() + wait_s
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not await self.client.km.is_alive():
                    self.dead = True  # a kernel that stops answering is not asked again
                    return None, f"the kernel did not answer within {wait_s:g} s"
                try:
                    msg = await kc.get_shell_msg(timeout=min(remaining, 1.0))
                except queue.Empty:
                    continue
                if msg.get("parent_header", {}).get("msg_id") == msg_id:
                    break
            content = msg.get("content", {})
            result = content.get("user_expressions", {}).get("a", {}) if content.get("status") == "ok" else content
            if result.get("status") != "ok":
                return None, f"{result.get('ename') or 'an error'}: {str(result.get('evalue') or '')[:300]}"
            data = result.get("data")
            try:
                return wire.answer_text(data.get("text/plain") if isinstance(data, dict) else None), ""
            except wire.WireError as why:
                return None, f"the kernel sent no readable answer: {why}"

        try:
            return run_sync(ask)()
        except Exception as err:  # noqa: BLE001  (a dead or broken kernel: no answer)
            self.dead = True
            return None, f"the kernel could not be reached ({type(err).__name__})"

    def fetch(self, name: str):
        text, why = self._evaluate(f"{_ANSWERS}.send(globals(), {name!r})")
        return _answers.loads(text, name) if text is not None else _answers.Rejected(name, why)

    def call(self, name: str, args: tuple, kwargs: dict):
        payload = _answers.dumps_value((tuple(args), dict(kwargs)))
        text, why = self._evaluate(f"{_ANSWERS}.call_send(globals(), {name!r}, {payload!r})")
        if text is None:
            raise LearnerError(f"{name}(...) {why}")
        value = _answers.loads(text, f"the result of {name}(...)")
        if isinstance(value, _answers.Rejected):
            raise LearnerError(value.message())
        return value


def _kernelspec(work: Path, limits: _sandbox.Limits, sandboxed: bool, env: dict[str, str], group):
    from jupyter_client.kernelspec import KernelSpecManager

    argv = _command.kernel_argv(work, limits, env, group) if sandboxed else _command.unsandboxed_argv(limits)
    spec = work / "kernels" / KERNEL_NAME
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(
        json.dumps(
            {
                "argv": argv,
                "display_name": "graded lab (sandbox)",
                "env": env,
                "interrupt_mode": "message",
                "language": "python",
            }
        )
    )
    return KernelSpecManager(kernel_dirs=[str(work / "kernels")], ensure_native_kernel=False)


def run_submission(
    nb,
    folder: Path,
    source_folder: Path | None,
    limits: _sandbox.Limits,
    timeout_s: int,
    total_s: int,
    allow_unsandboxed: bool,
    log,
    learner: str = "",
    setup: list[str] | None = None,
) -> None:
    """Grade ``nb`` in place: learner cells get their outputs, test cells an error output or none.

    ``folder`` holds the submission (copied into the sandbox); ``source_folder`` the lab's own files, whose
    helper modules the checks import (never the submission's copies of them). ``learner`` is the id the lab's
    per-learner numbers derive from ("" for the self-study lab), set alike in the kernel and in the checks.
    ``setup`` is the lab's setup cells from the instructor's source (:func:`.gradebook_cells.setup_sources`): the
    checks run those, whatever the submission's cells say they are; None takes them from the submission.
    """
    reason = _sandbox.require(allow_unsandboxed)
    if reason:
        log.warning("grading WITHOUT a sandbox: %s", reason)
    deadline = time.monotonic() + total_s
    sandboxed = not reason
    # two folders: the sandbox sees the first's submission/ (read-only) and ipc/; the second (the lab's helper
    # files, which the checks import in this process) it never sees
    with (
        tempfile.TemporaryDirectory(prefix="gpucost-grade-run-", dir=_command.run_root()) as tmp,
        tempfile.TemporaryDirectory(prefix="gpucost-grade-checks-") as checks_dir,
        _kernel_group(limits, sandboxed) as group,
    ):
        work = Path(tmp)
        _fill(work, folder, source_folder, Path(checks_dir), sandboxed)
        km, client = _client(nb, work, limits, sandboxed, {LEARNER_ENV: learner}, group, timeout_s)
        kernel = _Kernel(client, timeout_s)
        checks = Checks(kernel.fetch, kernel.call, Path(checks_dir), learner)
        for source in setup or ():
            _run_setup(checks, source, log)
        try:
            seal = (lambda: _command.seal(work)) if sandboxed else None
            # the submission's setup cells run in the checks only when the source's are not at hand
            trusted = setup is None
            _run_cells(nb, client, kernel, checks, deadline, timeout_s, total_s, log, started=seal, setup=trusted)
        finally:
            _stop(km)


def _fill(work: Path, folder: Path, source_folder: Path | None, checks_dir: Path, sandboxed: bool) -> None:
    """The run folder ``work`` made ready for the kernel (the submission's files in it), and the lab's own files
    in ``checks_dir``."""
    if sandboxed:
        _command.prepare(work)
        copy_submission(folder, work / "submission")
    else:
        copy_submission(folder, work / "notebook")
        (work / "ipc").mkdir()
    copy_submission(source_folder, checks_dir, skip_notebooks=True)


def _client(nb, work: Path, limits: _sandbox.Limits, sandboxed: bool, env: dict[str, str], group, timeout_s: int):
    """The learner's kernel's manager (its kernelspec in ``work``) and the nbclient that runs ``nb`` in it."""
    from jupyter_client.manager import AsyncKernelManager

    km = AsyncKernelManager(
        client_class="gpucost_lab.grading.run.CappedClient",
        kernel_name=KERNEL_NAME,
        kernel_spec_manager=_kernelspec(work, limits, sandboxed, env, group),
        transport="ipc",
        ip=str(work / "ipc" / "kernel"),
        connection_file=str(work / "connection.json"),
    )
    client = CappedNotebookClient(
        nb,
        km=km,
        timeout=timeout_s,
        startup_timeout=120,
        interrupt_on_timeout=True,
        allow_errors=True,
        kernel_name=KERNEL_NAME,
        shutdown_kernel="immediate",
        resources={"metadata": {"path": str(work if sandboxed else work / "notebook")}},
    )
    return km, client


def _run_setup(checks: Checks, source: str, log) -> None:
    """One setup cell of the lab, run in the grader (a failure is logged: the tests that need it fail)."""
    problem = checks.run_setup(source)
    if problem:
        log.warning("the lab's setup cell failed in the grader: %s", problem)


@contextlib.contextmanager
def _kernel_group(limits: _sandbox.Limits, sandboxed: bool):
    """The kernel's control group (every process left in it killed at the end), or None where grading goes on
    without one (no sandbox, or allowed explicitly)."""
    if not sandboxed or _sandbox.cgroup_problem():
        yield None
        return
    with confine.kernel_group(limits.total_memory_mb * 2**20, limits.processes) as group:
        yield group


def _stop(km) -> None:
    """Shut the kernel down and kill whatever is left of its sandbox (its whole process group)."""
    import signal

    from jupyter_core.utils import run_sync

    process = getattr(getattr(km, "provisioner", None), "process", None)
    try:
        if run_sync(km.is_alive)():
            run_sync(km.shutdown_kernel)(now=True)
    except Exception:  # noqa: BLE001  (already gone)
        pass
    if process is not None:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def _run_cells(
    nb,
    client,
    kernel: _Kernel,
    checks: Checks,
    deadline: float,
    timeout_s: int,
    total_s: int,
    log,
    started=None,
    setup: bool = True,
) -> None:
    from nbclient.exceptions import DeadKernelError

    timed_out = _note_timeouts(client, timeout_s)
    code_cells = 0
    with client.setup_kernel(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL):
        problem = kernel.warm_up(max(timeout_s, client.startup_timeout))  # as long as the kernel may take to start
        if problem:  # before any learner's cell: the grading's set-up, not the learner, is at fault; no silent zeros
            import gpucost_lab

            raise _sandbox.SandboxUnavailable(
                f"cannot grade: the graded kernel could not load the package that grades it, "
                f"{Path(gpucost_lab.__file__).parent} ({problem}); check that the kernel's Python and the grader's "
                f"import the same gpucost_lab"
            )
        if started is not None:
            started()  # before the learner's first cell
        for index, cell in enumerate(nb.cells):
            if cell.get("cell_type") != "code":
                continue
            code_cells += 1
            late = time.monotonic() > deadline
            if is_test(cell):
                cell.outputs = (
                    [error_output(f"not graded: the notebook ran past its total limit of {total_s} s")]
                    if late
                    else checks.check(cell.metadata["nbgrader"]["grade_id"], cell.source)
                )
                cell.source = visible_source(cell.source)
                continue
            if setup and is_trusted_setup(cell):
                _run_setup(checks, cell.source, log)
            if late or kernel.dead or code_cells > MAX_CELLS:
                cell.outputs = [new_output("stream", name="stdout", text="[not run when graded]\n")]
                continue
            try:
                client.execute_cell(cell, index)
            except DeadKernelError:
                kernel.dead = True
            cell.outputs = _timed_out(_truncate(cell.get("outputs", [])), index in timed_out, timeout_s)
            if index in timed_out and not kernel.dead and not kernel.probe(timeout_s):
                log.warning("the kernel stopped answering after cell %d reached the time limit", index)


def _note_timeouts(client, timeout_s: int) -> set[int]:
    """The indexes of the cells that reach their time limit, as ``client`` runs them (filled as it goes).

    At a cell's time limit nbclient interrupts the kernel and, by default, then waits for its reply with no end: a
    kernel the learner's code broke (a builtin replaced, say) never sends one. With ``error_on_timeout`` it stops
    waiting at the interrupt, the hook notes which cell that was, and a probe then decides whether the kernel
    still answers at all."""
    client.error_on_timeout = {
        "ename": "CellTimeoutError",
        "evalue": f"still running after {timeout_s} s",
        "traceback": [],
        _TIMEOUT_MARK: True,
    }
    timed_out: set[int] = set()

    def on_cell_executed(cell, cell_index, execute_reply):
        if (execute_reply or {}).get("content", {}).get(_TIMEOUT_MARK):
            timed_out.add(cell_index)

    client.on_cell_executed = on_cell_executed
    return timed_out


def _timed_out(outputs: list, timed_out: bool, timeout_s: int) -> list:
    """A cell stopped at the time limit ends with one CellTimeoutError, which replaces the interrupt's
    KeyboardInterrupt (not the learner's Ctrl-C) and is there even when the kernel sent no error at all."""
    if not timed_out:
        return outputs
    error = new_output(
        "error",
        ename="CellTimeoutError",
        evalue=f"still running after {timeout_s} s",
        traceback=[f"CellTimeoutError: still running after {timeout_s} s, so it was interrupted"],
    )
    return [
        out for out in outputs if not (out.get("output_type") == "error" and out.get("ename") == "KeyboardInterrupt")
    ] + [error]


def copy_submission(
    folder: Path | None, dest: Path, max_bytes: int = 64 * 2**20, skip_notebooks: bool = False, log=None
) -> None:
    """The plain files of ``folder`` (a submission's, or the lab's own) into ``dest``; at most ``max_bytes`` in all.

    Symbolic and hard links, device files, FIFOs and sockets are skipped, each logged as a warning on ``log`` (this
    module's logger by default), and every file is read through its own ``O_NOFOLLOW`` descriptor
    (:func:`.links.copy_plain`). ``folder`` itself is the grader's (nbgrader's autograded folder, the lab's source
    folder), so a link naming it is followed; nothing under it is.
    """
    dest.mkdir(parents=True, exist_ok=True)
    if folder is None or not folder.is_dir():
        return
    total = 0

    def keep(rel, st) -> bool:
        nonlocal total
        if ".ipynb_checkpoints" in rel.parts:
            return False
        if not stat.S_ISREG(st.st_mode):
            return True  # a folder: entered
        if skip_notebooks and rel.suffix == ".ipynb":
            return False
        total += st.st_size
        return total <= max_bytes  # past the limit, no later file either

    links.copy_plain(folder.resolve(), dest, keep=keep, log=log or logging.getLogger(__name__))


def _truncate(outputs: list) -> list:
    kept = []
    for out in outputs:
        text = json.dumps(out)
        if len(text) <= MAX_OUTPUT_CHARS:
            kept.append(out)
        else:
            kept.append(
                new_output(
                    "stream",
                    name="stdout",
                    text=f"[output of {len(text):,} characters cut to keep the graded notebook small]\n",
                )
            )
    return kept
