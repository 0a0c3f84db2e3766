"""What NumPy has and ``autopar.numpy`` does not, with the reason: the table docs/arrays.md shows.

``tests/test_numpy_namespace.py`` derives NumPy's names (each module's
``__all__``) and parameters (``inspect.signature``) from the installed NumPy
and checks that each one autopar.numpy lacks is listed here, that nothing
listed here exists after all, and that docs/arrays.md shows the same table.
A name is written as NumPy spells it below ``numpy`` (``linalg.eig``).

Written against NumPy 2.4: a NumPy release with new names or parameters
fails that test until they are served or listed here, which is the point.

``NAMES``: groups of names, one reason each. ``PARAMETERS``: parameters
refused wherever NumPy has them, one reason each. ``FUNCTION_PARAMETERS``:
the other refused parameters, by function.
"""

from __future__ import annotations

_LATER = "not implemented yet"

NAMES: list[tuple[str, tuple[str, ...]]] = [
    ("files, text and printing options are NumPy's: convert with x.numpy() and numpy.save/numpy.savetxt, "
     "read with autopar.numpy.asarray(numpy.load(path))", (
        "array2string", "array_repr", "array_str", "base_repr", "binary_repr", "format_float_positional",
        "format_float_scientific", "frombuffer", "fromfile", "fromregex", "fromstring", "genfromtxt",
        "get_printoptions", "load", "loadtxt", "memmap", "printoptions", "save", "savetxt", "savez",
        "savez_compressed", "set_printoptions")),
    ("autopar arrays hold numbers and booleans: no strings, objects, records, dates or NumPy scalar objects; "
     "ask about dtypes with isdtype(d, 'real floating') or issubdtype", (
        "ScalarType", "busday_count", "busday_offset", "busdaycalendar", "bytes_", "character", "datetime64",
        "datetime_as_string", "datetime_data", "dtypes", "flexible", "is_busday", "isnat", "mintypecode",
        "min_scalar_type", "common_type", "object_", "record", "sctypeDict", "str_", "timedelta64", "typecodes",
        "typename", "void")),
    ("C-named aliases and extended precision: spell the size (int8, int32, int64, uint64, complex128); "
     "longdouble, float128 and complex256 have no torch kernels", (
        "False_", "True_", "byte", "cdouble", "clongdouble", "complex256", "csingle", "float128", "intc", "long",
        "longdouble", "longlong", "short", "ubyte", "uintc", "uintp", "ulong", "ulonglong", "ushort")),
    ("NumPy's subpackages, matrices, masked arrays and tooling: use NumPy itself for them", (
        "asmatrix", "bmat", "char", "core", "ctypeslib", "emath", "exceptions", "f2py", "get_include", "info",
        "lib", "little_endian", "ma", "matrix", "polynomial", "rec", "recarray", "show_config", "show_runtime",
        "strings", "test", "testing", "typing")),
    ("element iterators with per-element flags and buffering: iterate over x.flat, ndindex(x.shape) or "
     "x.tolist()", (
        "nditer", "nested_iters")),
    ("they call a Python function per element, which would read every element and serialise the engine: write "
     "the function with array operations, or wrap a torch function with autopar.call", (
        "frompyfunc", "vectorize")),
    ("buffer sizes and error callbacks of NumPy's ufunc loops: autopar's kernels are torch's", (
        "getbufsize", "geterrcall", "setbufsize", "seterrcall")),
    ("NumPy's bit generators and legacy RandomState: autopar draws with torch's generators, so a seed gives "
     "other numbers than NumPy's anyway; seed with random.seed(n), or use random.default_rng(seed)", (
        "random.BitGenerator", "random.MT19937", "random.PCG64", "random.PCG64DXSM", "random.Philox",
        "random.RandomState", "random.SFC64", "random.SeedSequence", "random.get_state", "random.set_state")),
]

PARAMETERS: dict[str, str] = {
    "like": "dispatch to other array types (NEP 35): autopar.numpy makes autopar arrays",
    "subok": "autopar has no array subclasses",
    "order": "autopar stores arrays in C order (reshape, ravel and flatten take order='F')",
    "signature": "choose the computation dtype with dtype=",
    "out": "out= is taken by ufuncs, reductions, cumsum, argmax/argmin, matmul, dot, clip, round, take, "
           "einsum and the fft functions; elsewhere assign the result",
    "casting": "cast the operands first with astype",
    "dtype": "cast the operands first with astype",
    "where": "select with where(mask, result, other) afterwards",
    "overwrite_input": "a memory hint: autopar never overwrites inputs",
    "max_work": "autopar decides overlap from storages, exactly and at once",
    "keepdims": "expand the result with expand_dims",
    "shape": "make the array with zeros(shape, dtype=x.dtype) and friends",
    "hermitian": _LATER,
    "weights": _LATER,
    "initial": _LATER,
    "mean": _LATER,
    "sparse": "broadcasting the full arrays gives the same results",
}

FUNCTION_PARAMETERS: dict[str, dict[str, str]] = {
    "argpartition": {"kind": "the partition is torch's sort", "order": "no structured arrays"},
    "partition": {"kind": "the partition is torch's sort", "order": "no structured arrays"},
    "isin": {"kind": "the algorithm is torch's"},
    "where": {"x": "positional only: where(condition, x, y)", "y": "positional only: where(condition, x, y)"},
    "clip": {"a_min": "positional, or min=", "a_max": "positional, or max="},
    "eye": {"M": "positional: eye(N, M)"},
    "linalg.matrix_rank": {"tol": "relative tolerance rtol= (the Array API's)"},
    "linalg.pinv": {"rcond": "relative tolerance rtol= (the Array API's)"},
    "linalg.svd": {"compute_uv": "linalg.svdvals(x) gives the singular values alone"},
    "linalg.eigh": {"UPLO": "the lower triangle is read, NumPy's default"},
    "linalg.eigvalsh": {"UPLO": "the lower triangle is read, NumPy's default"},
    "random.seed": {"seed": "positional: random.seed(n)"},
    "nanpercentile": {"method": _LATER},
    "nanquantile": {"method": _LATER},
    "nanstd": {"correction": "ddof="},
    "nanvar": {"correction": "ddof="},
    "put": {"mode": _LATER},
    "ravel_multi_index": {"mode": _LATER},
    "asanyarray": {"copy": "asarray(x, copy=...)", "device": "asarray(x, device=...)"},
    "meshgrid": {"copy": "autopar's meshgrid returns new arrays"},
    "array": {"ndmin": "add axes with expand_dims or x[None]", "ndmax": "autopar does not limit dimensions"},
    "average": {"returned": "divide by the sum of the weights yourself"},
    "cross": {"axisa": "move the axis with moveaxis first", "axisb": "move the axis with moveaxis first",
              "axisc": "move the axis with moveaxis first"},
    "diff": {"prepend": "concatenate first", "append": "concatenate first"},
    "ediff1d": {"to_end": "concatenate afterwards", "to_begin": "concatenate afterwards"},
    "fill_diagonal": {"wrap": _LATER},
    "intersect1d": {"return_indices": _LATER},
    "linspace": {"retstep": "the step is (stop - start) / (num - 1)", "axis": "use moveaxis on the result"},
    "logspace": {"axis": "use moveaxis on the result"},
    "geomspace": {"axis": "use moveaxis on the result"},
    "unique": {"sorted": "the values come sorted"},
    "matmul": {"axes": "move axes with moveaxis first", "axis": "move axes with moveaxis first"},
    "matvec": {"axes": "move axes with moveaxis first", "axis": "move axes with moveaxis first"},
    "vecmat": {"axes": "move axes with moveaxis first", "axis": "move axes with moveaxis first"},
    "vecdot": {"axes": "move the axis with moveaxis first, or axis="},
}
for _name in ("setdiff1d", "setxor1d", "intersect1d", "isin"):
    FUNCTION_PARAMETERS.setdefault(_name, {})["assume_unique"] = "a speed hint: autopar makes the values unique"


def names() -> dict[str, str]:
    """Every unsupported name, with its reason."""
    return {name: reason for reason, group in NAMES for name in group}


def reason(function: str, parameter: str) -> str | None:
    """Why ``function`` refuses NumPy's ``parameter``, or None if it is not listed."""
    return FUNCTION_PARAMETERS.get(function, {}).get(parameter) or PARAMETERS.get(parameter)


def markdown() -> str:
    """The tables as docs/arrays.md shows them (between its ``unsupported-numpy`` markers)."""
    lines = ["| names | reason |", "|---|---|"]
    lines += ["| " + ", ".join(f"`{n}`" for n in group) + f" | {why} |" for why, group in NAMES]
    lines += ["", "Parameters refused wherever NumPy has them (where autopar's function lacks them):", "",
              "| parameter | reason |", "|---|---|"]  # fmt: skip
    lines += [f"| `{p}=` | {why} |" for p, why in PARAMETERS.items()]
    lines += ["", "And by function:", "", "| parameter | reason |", "|---|---|"]
    lines += [f"| `{f}({p}=)` | {why} |" for f, ps in FUNCTION_PARAMETERS.items() for p, why in ps.items()]
    return "\n".join(lines)
