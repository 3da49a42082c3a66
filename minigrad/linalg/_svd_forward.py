"""The ndarray-level SVD forward: validation, dtype policy, shapes, and dispatch to the
numba Jacobi kernels. The Tensor layer (minigrad/linalg/svd.py) calls svd_forward."""

import numpy as np

from minigrad.linalg.errors import LinAlgError

DEFAULT_MAX_SWEEPS = 60  # one-sided Jacobi typically needs 5-12; dgesvj caps at 30

# A lone matrix with k >= _BIG goes to the lone-matrix kernel (threads inside its Jacobi
# sweeps, as there is no batch to spread over), and its second factor is recovered with BLAS instead
# of being accumulated rotation by rotation; if it is also tall (rows >= _QR_RATIO * k),
# LAPACK's QR first shrinks it to the k x k triangle. Batches go to the batch-parallel kernel.
_BIG = 48
_QR_RATIO = 1.5
# Threads inside the sweeps only from this k on: each sweep has 2 * threads barriers, and
# on a shared machine a descheduled thread stalls every one of them (measured on 2 busy
# cores: 256x256 took 4x longer with 2 threads than with 1; 512x512 still gained).
_THREADS_MIN = 400

_WORK_DTYPE = {np.dtype(np.float16): np.float32, np.dtype(np.float32): np.float32,
               np.dtype(np.float64): np.float64}


def _threads(k: int) -> int:
    return _kernels().get_num_threads() if k >= _THREADS_MIN else 1


def _kernels():
    """The numba kernels, imported on first use: importing numba costs ~0.2 s, which
    `import minigrad` should not pay."""
    from minigrad.linalg import _jacobi

    return _jacobi


def _validate(a: np.ndarray) -> None:
    if a.ndim < 2:
        raise ValueError(
            f"svd expects an array of shape (*, m, n) with at least 2 dimensions, "
            f"got shape {a.shape}")
    if a.dtype not in _WORK_DTYPE:
        raise TypeError(
            f"svd needs a real floating-point array (float16, float32 or float64), got "
            f"{a.dtype}; convert it first, e.g. a.astype(np.float64)")


def _not_finite(index: tuple) -> LinAlgError:
    where = f" at batch index {index}" if index else ""
    return LinAlgError(f"svd: the input is not finite (contains NaN or Inf){where}")


def _not_converged(index: tuple, max_sweeps: int) -> LinAlgError:
    where = f" for batch index {index}" if index else ""
    return LinAlgError(
        f"svd: Jacobi did not converge in {max_sweeps} sweeps{where}; "
        f"raise max_sweeps or loosen tol")


def _empty(batch: tuple, m: int, n: int, full: bool, compute_uv: bool, dtype):
    """torch's answer when a dimension is 0: S empty, U and Vh identities (full) or empty."""
    k = min(m, n)
    s = np.zeros(batch + (k,), dtype=dtype)
    if not compute_uv:
        return None, s, None
    if full:
        u = np.broadcast_to(np.eye(m, dtype=dtype), batch + (m, m)).copy()
        vh = np.broadcast_to(np.eye(n, dtype=dtype), batch + (n, n)).copy()
    else:
        u = np.zeros(batch + (m, k), dtype=dtype)
        vh = np.zeros(batch + (k, n), dtype=dtype)
    return u, s, vh


def _fix_signs(u: np.ndarray, vh: np.ndarray, k: int) -> None:
    """In place: the first largest-|.| entry of each column of u is positive, row j of vh
    flips with column j (j < k); complement columns of u and rows of vh flip on their own."""
    cols = np.argmax(np.abs(u), axis=0)
    # A multiply by +-1 is exact and streams; boolean-mask indexing copied columns (slower).
    sign = np.where(u[cols, np.arange(u.shape[1])] < 0, -1.0, 1.0).astype(u.dtype)
    u *= sign
    vh[:k] *= sign[:k, None]
    if vh.shape[0] > k:
        rest = vh[k:]
        rows = np.argmax(np.abs(rest), axis=1)
        rest[rest[np.arange(rest.shape[0]), rows] < 0] *= -1


def _other_side(x: np.ndarray, u: np.ndarray, s: np.ndarray) -> np.ndarray:
    """V of x = U diag(s) V^T, given Jacobi's U and s: V = orth(x^T U diag(1/s)), by QR.

    This is dgejsv's trick: V need not be accumulated during the sweeps (which would
    double their cost). The error of x^T u_j / s_j grows like eps s_1 / s_j, but mostly
    along the columns with larger s_i, which a QR taken in descending order projects out;
    the rest moves x - U S V^T by only O(eps s_1). S itself, with its relative accuracy,
    comes from the sweeps alone. Columns with s_j <= eps s_1 are noise: they are zeroed
    and the QR completes them to an orthonormal basis.

    Usually W = x^T U diag(1/s) is orthonormal up to a small F = W^T W - I (~eps s_1/s_k);
    then the QR is done to first order, for a quarter of its cost: W^T W = R^T R gives
    R = I + C, C = triu(F, 1) + diag(F)/2, so Q = W R^-1 = W (I - C) up to O(k |F|^2),
    below eps when |F| <= sqrt(eps / k) (Cholesky QR to first order).
    """
    k = s.shape[0]
    eps = np.finfo(s.dtype).eps
    inv = np.zeros_like(s)
    keep = s > s[0] * eps
    inv[keep] = 1.0 / s[keep]
    w = x.T @ (u[:, :k] * inv)
    f = w.T @ w
    diag = np.arange(k)
    f[diag, diag] -= 1.0
    if np.abs(f).max() <= np.sqrt(eps / k):
        c = np.triu(f, 1)
        c[diag, diag] = 0.5 * f[diag, diag]
        return w - w @ c
    # Ill-conditioned (graded) input or zeroed columns: Householder QR.
    q, r = np.linalg.qr(w)
    # Householder QR may flip a column; undo it so that x v_j = s_j u_j, not -s_j u_j.
    q *= np.where(np.diagonal(r) < 0, -1.0, 1.0).astype(q.dtype)
    return q


def _svd_qr(a: np.ndarray, full: bool, compute_uv: bool, tol: float, max_sweeps: int):
    """SVD of one tall matrix a (m >= n) via A P = Q R (columns sorted by norm, a cheap
    stand-in for QR column pivoting), then Jacobi on the rows of R (as dgejsv, which
    converges in fewer sweeps than Jacobi on A); the left vectors of R are recovered
    afterwards (_other_side)."""
    m, n = a.shape
    perm = np.argsort(-np.einsum("ij,ij->j", a, a), kind="stable")
    mode = "complete" if (full and compute_uv and m > n) else "reduced"
    if compute_uv:
        q, r = np.linalg.qr(a[:, perm], mode=mode)
    else:
        r = np.linalg.qr(a[:, perm], mode="r")
    r = np.ascontiguousarray(r[:n])
    s = np.empty(n, dtype=a.dtype)
    jac = _kernels()
    if compute_uv:
        vrt = np.empty((n, n), dtype=a.dtype)
        status = jac.svd_left(r, True, tol, max_sweeps, vrt, s, _threads(n))
    else:
        dummy = np.empty((0, 0), dtype=a.dtype)
        status = jac.svd_single(r, True, False, False, tol, max_sweeps, dummy, s, dummy,
                                _threads(n))
    if status != jac.OK:
        raise _not_converged((), max_sweeps)
    if not compute_uv:
        return None, s, None
    # Jacobi ran on the columns of R^T: its left vectors are R's right ones.
    ur = _other_side(r.T, vrt.T, s)
    u = q[:, :n] @ ur
    if mode == "complete":
        u = np.concatenate([u, q[:, n:]], axis=1)
    vh = np.empty_like(vrt)
    vh[:, perm] = vrt
    return u, s, vh


def _svd_single(a: np.ndarray, trans: bool, full: bool, compute_uv: bool, tol: float,
                max_sweeps: int):
    """One large matrix straight to the kernel, threads working inside each sweep; the
    side Jacobi does not produce is recovered with BLAS (_other_side)."""
    m, n = a.shape
    k = min(m, n)
    s = np.empty(k, dtype=a.dtype)
    jac = _kernels()
    if compute_uv:
        ak = a.T if trans else a  # the matrix Jacobi works on: rows >= columns
        ut = np.empty((ak.shape[0] if full else k, ak.shape[0]), dtype=a.dtype)
        status = jac.svd_left(a, trans, tol, max_sweeps, ut, s, _threads(k))
    else:
        dummy = np.empty((0, 0), dtype=a.dtype)
        status = jac.svd_single(a, trans, full, False, tol, max_sweeps, dummy, s, dummy,
                                _threads(k))
    if status == jac.NOT_FINITE:
        raise _not_finite(())
    if status != jac.OK:
        raise _not_converged((), max_sweeps)
    if not compute_uv:
        return None, s, None
    v = _other_side(ak, ut.T, s)
    u, vh = (v, ut) if trans else (ut.T, v.T)
    u, vh = np.ascontiguousarray(u), np.ascontiguousarray(vh)
    _fix_signs(u, vh, k)
    return u, s, vh


def svd_forward(a: np.ndarray, full_matrices: bool = True, compute_uv: bool = True, *,
                tol: float | None = None, max_sweeps: int = DEFAULT_MAX_SWEEPS,
                ) -> tuple[np.ndarray | None, np.ndarray, np.ndarray | None]:
    """A = U diag(S) Vh by one-sided Jacobi, batched over leading dims (torch.linalg.svd shapes).

    Returns (U, S, Vh): U (*, m, m) or (*, m, k), S (*, k) descending and >= 0,
    Vh (*, n, n) or (*, k, n), k = min(m, n), all in a's dtype (float16 is computed in
    float32). Without compute_uv, U and Vh are None. Signs: the first entry of largest
    magnitude in each column of U is positive (v_j flips with u_j; complement columns of a
    full U and rows of a full Vh are normalised the same way on their own).
    tol is the relative orthogonality threshold |a_p.a_q| <= tol |a_p||a_q| (default
    sqrt(rows) * eps of the working dtype); max_sweeps caps the Jacobi sweeps.
    Raises ValueError / TypeError for bad shapes or dtypes, LinAlgError for NaN/Inf input
    or non-convergence.

    >>> u, s, vh = svd_forward(np.array([[3.0, 0.0], [0.0, -4.0]]))
    >>> s
    array([4., 3.])
    """
    a = np.asarray(a)
    _validate(a)
    out_dtype = a.dtype
    work = _WORK_DTYPE[out_dtype]
    *batch, m, n = a.shape
    batch = tuple(batch)
    k = min(m, n)
    if k == 0 or 0 in batch:
        return _empty(batch, m, n, full_matrices, compute_uv, out_dtype)
    if max_sweeps < 1:
        raise ValueError(f"max_sweeps must be at least 1, got {max_sweeps}")

    a3 = np.ascontiguousarray(a.reshape((-1, m, n)), dtype=work)
    nbatch = a3.shape[0]
    trans = m < n
    rows = max(m, n)

    if nbatch == 1 and k >= _BIG:
        if rows >= _QR_RATIO * k:
            if not np.isfinite(a3).all():
                raise _not_finite(())
            tol_ = float(np.sqrt(k) * np.finfo(work).eps) if tol is None else float(tol)
            ak = a3[0].T if trans else a3[0]
            uk, s, vhk = _svd_qr(ak, full_matrices, compute_uv, tol_, int(max_sweeps))
            if compute_uv:
                if trans:
                    uk, vhk = np.ascontiguousarray(vhk.T), np.ascontiguousarray(uk.T)
                _fix_signs(uk, vhk, k)
        else:
            tol_ = float(np.sqrt(rows) * np.finfo(work).eps) if tol is None else float(tol)
            uk, s, vhk = _svd_single(a3[0], trans, full_matrices, compute_uv, tol_,
                                     int(max_sweeps))
        u = None if uk is None else uk.reshape(batch + uk.shape)
        vh = None if vhk is None else vhk.reshape(batch + vhk.shape)
        return _cast(u, out_dtype), _cast(s.reshape(batch + (k,)), out_dtype), _cast(vh, out_dtype)

    tol_ = float(np.sqrt(rows) * np.finfo(work).eps) if tol is None else float(tol)
    if compute_uv:
        u = np.empty((nbatch, m, m if full_matrices else k), dtype=work)
        vh = np.empty((nbatch, n if full_matrices else k, n), dtype=work)
    else:
        u = vh = np.empty((nbatch, 0, 0), dtype=work)
    s = np.empty((nbatch, k), dtype=work)
    status = np.empty(nbatch, dtype=np.int8)
    jac = _kernels()
    jac.svd_batched(a3, trans, bool(full_matrices), bool(compute_uv), tol_,
                    int(max_sweeps), u, s, vh, status, 8 * jac.get_num_threads())
    bad = np.flatnonzero(status)
    if bad.size:
        index = tuple(int(i) for i in np.unravel_index(bad[0], batch)) if batch else ()
        if status[bad[0]] == jac.NOT_FINITE:
            raise _not_finite(index)
        raise _not_converged(index, max_sweeps)
    s = s.reshape(batch + (k,))
    if not compute_uv:
        return None, _cast(s, out_dtype), None
    u = u.reshape(batch + u.shape[1:])
    vh = vh.reshape(batch + vh.shape[1:])
    return _cast(u, out_dtype), _cast(s, out_dtype), _cast(vh, out_dtype)


def _cast(x: np.ndarray | None, dtype) -> np.ndarray | None:
    return x if x is None or x.dtype == dtype else x.astype(dtype)
