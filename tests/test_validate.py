"""gpucost_lab._validate: the shared input checks, each error naming the field, the value and what is allowed,
against hand-written messages and the file system's limits (255-byte names, 4,096-byte paths)."""

import os
import pickle
import stat

import numpy as np
import pytest

from gpucost_lab._validate import (
    MAX_OUTPUT_NAME_BYTES,
    InputError,
    fraction,
    greater_than,
    input_file,
    integer_at_least,
    non_empty_text,
    non_negative,
    one_of,
    output_file,
    path_lengths,
    positive,
    price_per_hour,
    too_large,
)


def message(call, *args, **kwargs) -> tuple[str, str]:
    """(field, message) of the InputError ``call`` raises."""
    with pytest.raises(InputError) as err:
        call(*args, **kwargs)
    return err.value.field, str(err.value)


def test_an_input_error_is_a_value_error_that_carries_its_field_across_processes():
    err = InputError("runs[2].seed", "runs[2].seed must be >= 0, got -1")
    assert isinstance(err, ValueError) and err.field == "runs[2].seed"
    copy = pickle.loads(pickle.dumps(err))
    assert (type(copy), copy.field, str(copy)) == (InputError, "runs[2].seed", "runs[2].seed must be >= 0, got -1")


# -- numbers -----------------------------------------------------------------------------------------------------------
def test_numbers_come_back_as_floats_and_anything_else_is_named():
    assert positive("x", 2) == 2.0 and isinstance(positive("x", 2), float)
    assert non_negative("x", 0) == 0.0 and greater_than("x", 1.5, 1) == 1.5
    assert message(positive, "x", True) == ("x", "x must be a number, got True")  # a bool is not a number here
    assert message(positive, "x", "1") == ("x", "x must be a number, got '1'")
    assert message(non_negative, "x", float("inf")) == ("x", "x must be a finite number, got inf")
    assert message(positive, "x", float("nan"))[1] == "x must be a finite number, got nan"


def test_each_bound_is_strict_or_not_as_its_name_says():
    assert message(positive, "lr", 0) == ("lr", "lr must be > 0, got 0")
    assert message(non_negative, "gap", -1e-9) == ("gap", "gap must be >= 0, got -1e-09")
    assert message(greater_than, "x", 1, 1) == ("x", "x must be > 1, got 1")
    assert fraction("f", 0) == 0.0 and message(fraction, "f", 1)[1] == "f must be in [0, 1), got 1"
    assert fraction("f", 1, include_one=True) == 1.0
    assert message(fraction, "f", 0, include_zero=False, include_one=True)[1] == "f must be in (0, 1], got 0"
    assert message(fraction, "f", -0.1, include_one=True)[1] == "f must be in [0, 1], got -0.1"


def test_integers_take_integral_floats_and_numpy_integers_and_refuse_the_rest():
    assert integer_at_least("n", 3.0, 1) == 3 and isinstance(integer_at_least("n", 3.0, 1), int)
    assert integer_at_least("n", np.int64(5), 1) == 5 and type(integer_at_least("n", np.int64(5), 1)) is int
    assert message(integer_at_least, "n", 2.5, 1) == ("n", "n must be an integer >= 1, got 2.5")
    assert message(integer_at_least, "n", True, 0)[1] == "n must be an integer >= 0, got True"
    assert message(integer_at_least, "n", 0, 1)[1] == "n must be an integer >= 1, got 0"
    assert integer_at_least("n", 10, 1, 10) == 10
    assert message(integer_at_least, "n", 11, 1, 10)[1] == "n must be an integer in [1, 10], got 11"


def test_too_large_is_an_error_to_raise_with_the_limit_to_six_digits():
    err = too_large("steps", 10_000, 584, "layers=100", "the trace passes 2,000,000 events")
    assert isinstance(err, InputError) and err.field == "steps"
    assert str(err) == "steps must be <= 584 with layers=100: beyond it the trace passes 2,000,000 events, got 10000"
    assert "must be <= 1.23457e+06 with" in str(too_large("n", 2e6, 1_234_567, "x=1", "it overflows"))


def test_prices_names_and_choices():
    assert price_per_hour("price", 2.1) == 2.1 and price_per_hour("price", 1e6) == 1e6
    assert message(price_per_hour, "price", 0)[1] == "price must be > 0, got 0"
    assert message(price_per_hour, "price", 1e-7)[1].startswith("price must be in [1e-06, 1e+06] USD per hour")
    assert message(price_per_hour, "price", 2e6)[1].endswith("got 2000000.0")
    assert one_of("mode", "b", ["a", "b"]) == "b"
    assert message(one_of, "mode", "z", ("a", "b")) == ("mode", "mode must be one of 'a', 'b', got 'z'")
    assert non_empty_text("title", " x ") == " x "
    assert message(non_empty_text, "title", " ")[1] == "title must be a non-empty string, got ' '"
    assert message(non_empty_text, "title", 5)[1] == "title must be a non-empty string, got 5"


# -- paths -------------------------------------------------------------------------------------------------------------
def test_an_output_file_is_a_new_or_regular_file_in_an_existing_folder(tmp_path):
    assert output_file("out", tmp_path / "new.json") == tmp_path / "new.json"
    (tmp_path / "old.json").write_text("{}")
    assert output_file("out", str(tmp_path / "old.json")) == tmp_path / "old.json"  # replaced later, atomically
    assert message(output_file, "out", tmp_path)[1] == f"out must be a file path, not a folder, got {str(tmp_path)!r}"
    assert message(output_file, "out", f"{tmp_path}/")[1].startswith(
        "out must name a file, not a folder (it ends in '/')"
    )
    assert message(output_file, "out", "")[1] == "out must name a file, got ''"
    assert message(output_file, "out", 7)[1] == "out must name a file, got 7"
    assert message(output_file, "out", "a\x00b")[1] == "out must not hold a NUL character, got 'a\\x00b'"
    assert message(output_file, "out", tmp_path / "missing" / "x.json")[1].startswith(
        "out must be in an existing folder"
    )
    assert message(output_file, "out", os.devnull)[1].startswith("out must be a regular file (or a new one)")


def test_an_output_name_leaves_room_for_its_temporary_file(tmp_path):
    # 255 bytes a name, less the 25 the temporary name ".NAME.PID.8-hex.tmp" adds: 230
    assert MAX_OUTPUT_NAME_BYTES == 230
    assert output_file("out", tmp_path / ("a" * 230)) == tmp_path / ("a" * 230)
    field, text = message(output_file, "out", tmp_path / ("a" * 231))
    assert field == "out" and text.startswith("out must end in a name of at most 230 bytes (the file system allows 255")
    # bytes, not characters: 116 x "é" is 232 bytes in UTF-8
    assert "got one of 232 bytes" in message(output_file, "out", tmp_path / ("é" * 116))[1]


def test_path_lengths_count_each_name_and_the_whole_path():
    path_lengths("p", "/tmp/" + "a" * 255)  # a name of exactly 255 bytes
    assert "of at most 255 bytes, got one of 256 bytes" in message(path_lengths, "p", "/tmp/" + "a" * 256)[1]
    assert "names of at most 255 bytes each" in message(path_lengths, "p", "/" + "a" * 256 + "/x", 255)[1]
    # 4,095 bytes a path (PATH_MAX less its NUL), less the temporary file's 25: 4,070
    deep = "/" + "/".join(["a" * 200] * 20) + "/" + "b" * 49  # 20 x 201 + 1 + 49 = 4,070 bytes
    assert len(deep.encode()) == 4070
    path_lengths("p", deep)
    assert "must be at most 4070 bytes long" in message(path_lengths, "p", deep + "c")[1]


def test_an_input_file_is_a_regular_file_that_exists(tmp_path):
    source = tmp_path / "trace.json"
    source.write_text("[]")
    path, status = input_file("trace", str(source))
    assert path == source and status.st_size == 2 and stat.S_ISREG(status.st_mode)
    assert (
        message(input_file, "trace", tmp_path / "gone.json")[1]
        == f"trace {str(tmp_path / 'gone.json')!r}: no such file"
    )
    assert message(input_file, "trace", tmp_path / "gone", "trace file")[1].endswith(": no such trace file")
    assert message(input_file, "trace", tmp_path)[1] == f"trace {str(tmp_path)!r} is a directory; allowed: a file"
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    assert "is a FIFO (named pipe), which may never end; allowed: a regular file" in message(input_file, "t", fifo)[1]
    assert "is a device, which may never end" in message(input_file, "t", os.devnull)[1]


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write into any folder")
def test_an_output_file_in_a_read_only_folder_is_refused(tmp_path):
    tmp_path.chmod(0o500)
    try:
        assert message(output_file, "out", tmp_path / "x.json")[1].startswith(
            "out must be in a folder you may write to"
        )
    finally:
        tmp_path.chmod(0o700)
