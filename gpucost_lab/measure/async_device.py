"""A real asynchronous "device" on the CPU, to show why unsynchronized timing lies (chapter 01).

A CUDA launch returns as soon as the kernel is queued; the GPU runs it later. :class:`AsyncDevice`
does the same with a worker thread: :meth:`launch` queues a function and returns at once,
:meth:`synchronize` waits until everything queued has run. A clock read without synchronizing
first stops before the work is done, exactly as ``time.time()`` around CUDA launches does.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable


class AsyncDevice:
    """A queue of work run in order by one background thread."""

    def __init__(self) -> None:
        self._work: queue.Queue = queue.Queue()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="async-device", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            fn = self._work.get()
            try:
                if fn is None:
                    return
                if self._error is None:
                    fn()
            except BaseException as err:  # surfaced at the next synchronize, like a CUDA error
                self._error = err
            finally:
                self._work.task_done()

    def launch(self, fn: Callable[[], object]) -> None:
        """Queue ``fn`` and return immediately."""
        if not self._thread.is_alive():
            raise RuntimeError("launch: the device is closed")
        self._work.put(fn)

    def synchronize(self) -> None:
        """Wait until every queued function has run; re-raise the first error one raised."""
        self._work.join()
        if self._error is not None:
            err, self._error = self._error, None
            raise err

    def close(self) -> None:
        """Finish the queued work and stop the worker thread."""
        if self._thread.is_alive():
            self._work.put(None)
            self._thread.join()

    def __enter__(self) -> AsyncDevice:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
