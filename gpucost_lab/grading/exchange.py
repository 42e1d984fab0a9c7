"""``nbgrader collect`` that copies only plain files: ``c.ExchangeFactory.collect`` in nbgrader_config.py.

nbgrader's own collect copies each learner's folder out of the exchange's ``inbound/`` with ``shutil.copytree``,
with the instructor's rights, following every link in it. A learner may change her folder there after ``nbgrader
submit``, and a link to the course's ``gradebook.db`` or ``solutions/`` would be collected as the file it points to,
autograded beside her notebook and released back to her with her feedback. :class:`SafeExchangeCollect` checks each
learner's submission folder before anything is copied (:func:`.links.offending`): one that is a link, or holds a
symbolic or hard link, a device file, a FIFO or a socket, is not collected (an earlier collected submission of hers
stays as it was), and the log names the learner and the file. The others are copied file by file, each read
through its own ``O_NOFOLLOW`` descriptor (:func:`.links.copy_plain`), with nbgrader's ``CourseDirectory.ignore``,
``include``, ``max_file_size`` and ``max_dir_size`` as nbgrader applies them.
"""

from __future__ import annotations

import os
import shutil
import stat

from nbgrader.exchange.default.collect import ExchangeCollect
from nbgrader.utils import ignore_patterns

from gpucost_lab.grading.links import ALLOWED, copy_plain, offending


class SafeExchangeCollect(ExchangeCollect):
    """nbgrader's ``ExchangeCollect`` that collects only submissions of plain files and folders (module docstring)."""

    src_records: list[dict]  # set by nbgrader's ``init_src``: one record per learner's submission

    def copy_files(self) -> None:
        kept = []
        for rec in self.src_records:
            refused = offending(os.path.join(self.inbound_path, rec["filename"]))
            if refused:
                self.log.error(
                    "Not collecting the submission of %s (%s): %s%s; %s",
                    rec["username"],
                    rec["filename"],
                    "; ".join(map(str, refused[:5])),
                    f"; and {len(refused) - 5} more" if len(refused) > 5 else "",
                    ALLOWED,
                )
            else:
                kept.append(rec)
        self.src_records = kept
        super().copy_files()

    def do_copy(self, src, dest, log=None) -> None:
        """Copy the submission ``src`` to ``dest`` as nbgrader's ``do_copy`` does, but only its plain files, each
        read through no link; a file that became a link since :meth:`copy_files` checked it leaves nothing at
        ``dest`` (the submission is not collected)."""
        dir_size = self.get_size(src)
        if dir_size > 1000 * self.coursedir.max_dir_size:
            self.log.error("Directory size is too big")
            raise RuntimeError(
                f"Directory size is too big. Size is {dir_size}, maximum size is {1000 * self.coursedir.max_dir_size}"
            )
        ignore = ignore_patterns(
            exclude=self.coursedir.ignore,
            include=self.coursedir.include,
            max_file_size=self.coursedir.max_file_size,
            log=self.log,
        )

        def keep(rel, st) -> bool:
            return not ignore(os.path.join(src, *rel.parent.parts), [rel.name])

        refused = copy_plain(src, dest, keep=keep, metadata=True)
        if refused:
            shutil.rmtree(dest, ignore_errors=True)
            self.log.error(
                "Not collecting the submission %s: it changed while it was collected (%s); %s",
                src,
                "; ".join(map(str, refused)),
                ALLOWED,
            )
            return
        if self.coursedir.groupshared:  # as nbgrader's do_copy: the course's group may read and write the copy
            for dirname, _, filenames in os.walk(dest):
                for path, bits, mask in [(dirname, 0o2770, 0o2777)] + [
                    (os.path.join(dirname, f), 0o660, 0o777) for f in filenames
                ]:
                    mode = os.stat(path).st_mode
                    if stat.S_IMODE(mode) & bits != bits:
                        try:
                            os.chmod(path, (mode | bits) & mask)
                        except PermissionError:
                            self.log.warning("Could not update permissions of %s to make it groupshared", path)
