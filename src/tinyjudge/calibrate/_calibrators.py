"""Post-hoc calibrators over a source's class probabilities, as scikit-learn estimators.

Each maps an (n, k) array of source probabilities to calibrated probabilities
whose rows sum to 1. Sources such as an LLM judge often give one-hot
probabilities (exactly 0 and 1), so every log is taken of probabilities clipped
to ``[eps, 1]``; the calibrated output is never exactly 0 or 1 for temperature,
vector and Platt scaling.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy.optimize import minimize, minimize_scalar
from scipy.special import expit, log_softmax, softmax
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted

from tinyjudge.errors import UsageError

__all__ = [
    "BaseCalibrator",
    "TemperatureScaling",
    "VectorScaling",
    "PlattScaling",
    "IsotonicCalibration",
    "CALIBRATORS",
    "make_calibrator",
    "check_probs",
]


def check_probs(P: Any, n_classes: int | None = None, what: str = "P") -> np.ndarray:
    """Validate an (n, k) probability array: finite, in [0, 1], rows summing to 1 (+-1e-3)."""
    arr = np.asarray(P, dtype=float)
    if arr.ndim != 2 or arr.shape[1] < 2:
        raise UsageError(f"{what} must be an (n, k) array with k >= 2 classes, got {arr.shape}")
    if n_classes is not None and arr.shape[1] != n_classes:
        raise UsageError(f"{what} has {arr.shape[1]} columns, the calibrator {n_classes}")
    if not np.isfinite(arr).all() or (arr < 0).any() or (arr > 1).any():
        raise UsageError(f"{what} must hold probabilities in [0, 1]")
    sums = arr.sum(axis=1)
    bad = np.flatnonzero(np.abs(sums - 1.0) > 1e-3)
    if bad.size:
        raise UsageError(f"{what} row {bad[0]} sums to {sums[bad[0]]:.4f}, not 1")
    return arr


class BaseCalibrator(ClassifierMixin, BaseEstimator):
    """Shared input handling: ``fit(P, y)``, ``predict_proba(P)``, ``predict(P)``.

    Args:
        classes: the class names in column order of ``P``. With it, ``y`` may hold
            names; without it, ``y`` holds column indices.
        eps: probabilities are clipped to ``[eps, 1]`` before any log.
    """

    method: str = ""

    def __init__(self, classes: Sequence[Any] | None = None, eps: float = 1e-6) -> None:
        self.classes = classes
        self.eps = eps

    def _targets(self, y: Any, k: int) -> np.ndarray:
        y = list(np.asarray(y).ravel().tolist())
        if self.classes is not None:
            if len(self.classes) != k:
                raise UsageError(f"classes has {len(self.classes)} names for {k} columns")
            index = {c: i for i, c in enumerate(self.classes)}
            if all(v in index for v in y):
                return np.asarray([index[v] for v in y], dtype=np.intp)
        if all(isinstance(v, int) and 0 <= v < k for v in y):
            return np.asarray(y, dtype=np.intp)
        bad = next(v for v in y if not (isinstance(v, int) and 0 <= v < k))
        allowed = list(self.classes) if self.classes is not None else f"indices 0..{k - 1}"
        raise UsageError(f"y holds {bad!r}; allowed: {allowed}")

    def fit(self, P: Any, y: Any) -> BaseCalibrator:
        """Fit on source probabilities ``P`` (n, k) and true classes ``y`` (n,)."""
        P = check_probs(P)
        n, k = P.shape
        t = self._targets(y, k)
        if len(t) != n:
            raise UsageError(f"P has {n} rows but y has {len(t)} entries")
        if n == 0:
            raise UsageError("cannot fit a calibrator on zero items")
        self.classes_ = np.asarray(self.classes if self.classes is not None else np.arange(k))
        self.n_features_in_ = k
        self._fit(np.clip(P, self.eps, 1.0), t)
        return self

    def predict_proba(self, P: Any) -> np.ndarray:
        """Calibrated probabilities, shape (n, k), rows summing to 1."""
        check_is_fitted(self, "classes_")
        P = check_probs(P, self.n_features_in_)
        out = self._transform(np.clip(P, self.eps, 1.0))
        return _renormalise(out)

    def predict(self, P: Any) -> np.ndarray:
        """The most probable class name (or index) per row."""
        return self.classes_[np.argmax(self.predict_proba(P), axis=1)]

    def get_state(self) -> dict[str, Any]:
        """The fitted parameters as JSON-ready lists and floats."""
        raise NotImplementedError

    def set_state(self, params: dict[str, Any], classes: Sequence[Any]) -> BaseCalibrator:
        """Restore a fitted calibrator from :meth:`get_state`'s output."""
        self.classes_ = np.asarray(list(classes))
        self.n_features_in_ = len(classes)
        self._set(params)
        return self

    def _fit(self, P: np.ndarray, y: np.ndarray) -> None:
        raise NotImplementedError

    def _transform(self, P: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def _set(self, params: dict[str, Any]) -> None:
        raise NotImplementedError


def _renormalise(P: np.ndarray) -> np.ndarray:
    P = np.clip(P, 0.0, None)
    sums = P.sum(axis=1, keepdims=True)
    k = P.shape[1]
    # a row that every one-vs-rest map sent to 0 carries no information: uniform
    return np.where(sums > 0, P / np.where(sums > 0, sums, 1.0), 1.0 / k)


class TemperatureScaling(BaseCalibrator):
    """One temperature T for all classes: softmax(log p / T) (Guo et al., 2017).

    Fitted attributes: ``temperature_``.
    """

    method = "temperature"

    def _fit(self, P: np.ndarray, y: np.ndarray) -> None:
        logits = np.log(P)
        rows = np.arange(len(y))

        def nll(log_t: float) -> float:
            return float(-log_softmax(logits / np.exp(log_t), axis=1)[rows, y].mean())

        # T from e^-4 (sharpen) to e^6 (flatten one-hot logits of log(eps) ~ -14)
        res = minimize_scalar(nll, bounds=(-4.0, 6.0), method="bounded")
        self.temperature_ = float(np.exp(res.x))

    def _transform(self, P: np.ndarray) -> np.ndarray:
        return softmax(np.log(P) / self.temperature_, axis=1)

    def get_state(self) -> dict[str, Any]:
        check_is_fitted(self, "temperature_")
        return {"temperature": self.temperature_}

    def _set(self, params: dict[str, Any]) -> None:
        self.temperature_ = float(params["temperature"])


class VectorScaling(BaseCalibrator):
    """A scale and a bias per class: softmax(w * log p + b) (Guo et al., 2017).

    Args:
        reg: L2 pull of ``w`` towards 1 and ``b`` towards 0, which keeps the fit
            finite when a class is rare or absent in the calibration labels.

    Fitted attributes: ``scale_``, ``bias_``.
    """

    method = "vector"

    def __init__(
        self, classes: Sequence[Any] | None = None, eps: float = 1e-6, reg: float = 1e-3
    ) -> None:
        super().__init__(classes=classes, eps=eps)
        self.reg = reg

    def _fit(self, P: np.ndarray, y: np.ndarray) -> None:
        n, k = P.shape
        logits = np.log(P)
        onehot = np.eye(k)[y]

        def loss(theta: np.ndarray) -> tuple[float, np.ndarray]:
            w, b = theta[:k], theta[k:]
            z = logits * w + b
            logp = log_softmax(z, axis=1)
            resid = (np.exp(logp) - onehot) / n
            value = -(logp * onehot).sum() / n + self.reg * (((w - 1) ** 2).sum() + (b**2).sum())
            grad_w = (resid * logits).sum(axis=0) + 2 * self.reg * (w - 1)
            grad_b = resid.sum(axis=0) + 2 * self.reg * b
            return float(value), np.concatenate([grad_w, grad_b])

        theta0 = np.concatenate([np.ones(k), np.zeros(k)])
        res = minimize(loss, theta0, jac=True, method="L-BFGS-B")
        self.scale_ = res.x[:k].copy()
        self.bias_ = res.x[k:].copy()

    def _transform(self, P: np.ndarray) -> np.ndarray:
        return softmax(np.log(P) * self.scale_ + self.bias_, axis=1)

    def get_state(self) -> dict[str, Any]:
        check_is_fitted(self, "scale_")
        return {"scale": self.scale_.tolist(), "bias": self.bias_.tolist()}

    def _set(self, params: dict[str, Any]) -> None:
        self.scale_ = np.asarray(params["scale"], dtype=float)
        self.bias_ = np.asarray(params["bias"], dtype=float)


def _fit_platt(x: np.ndarray, is_pos: np.ndarray) -> tuple[float, float]:
    # Platt (1999): fit sigmoid(a x + b) to smoothed targets, which stays finite
    # when the class is separable or absent in the calibration data.
    n_pos = float(is_pos.sum())
    n_neg = float(len(is_pos) - n_pos)
    t = np.where(is_pos, (n_pos + 1) / (n_pos + 2), 1 / (n_neg + 2))

    def loss(theta: np.ndarray) -> tuple[float, np.ndarray]:
        z = theta[0] * x + theta[1]
        # -[t log s(z) + (1-t) log(1-s(z))] = logaddexp(0, z) - t z
        value = float((np.logaddexp(0.0, z) - t * z).mean())
        r = (expit(z) - t) / len(x)
        return value, np.array([(r * x).sum(), r.sum()])

    res = minimize(loss, np.array([1.0, 0.0]), jac=True, method="L-BFGS-B")
    return float(res.x[0]), float(res.x[1])


class PlattScaling(BaseCalibrator):
    """One-vs-rest Platt scaling: sigmoid(a_j logit(p_j) + b_j) per class, renormalised.

    Fitted attributes: ``slope_``, ``intercept_`` (one per class).
    """

    method = "platt"

    def _fit(self, P: np.ndarray, y: np.ndarray) -> None:
        x = self._logit(P)
        fits = [_fit_platt(x[:, j], y == j) for j in range(P.shape[1])]
        self.slope_ = np.array([a for a, _ in fits])
        self.intercept_ = np.array([b for _, b in fits])

    def _logit(self, P: np.ndarray) -> np.ndarray:
        q = np.clip(P, self.eps, 1.0 - self.eps)
        return np.log(q) - np.log1p(-q)

    def _transform(self, P: np.ndarray) -> np.ndarray:
        return expit(self._logit(P) * self.slope_ + self.intercept_)

    def get_state(self) -> dict[str, Any]:
        check_is_fitted(self, "slope_")
        return {"slope": self.slope_.tolist(), "intercept": self.intercept_.tolist()}

    def _set(self, params: dict[str, Any]) -> None:
        self.slope_ = np.asarray(params["slope"], dtype=float)
        self.intercept_ = np.asarray(params["intercept"], dtype=float)


class IsotonicCalibration(BaseCalibrator):
    """One-vs-rest isotonic regression of 1[y = j] on p_j, renormalised (Zadrozny & Elkan, 2002).

    Each map is stored as its thresholds and applied by linear interpolation,
    clipped at the ends, exactly as ``IsotonicRegression(out_of_bounds="clip")``.

    Fitted attributes: ``thresholds_``, a list of (x, y) arrays per class.
    """

    method = "isotonic"

    def _fit(self, P: np.ndarray, y: np.ndarray) -> None:
        from sklearn.isotonic import IsotonicRegression

        self.thresholds_ = []
        for j in range(P.shape[1]):
            iso = IsotonicRegression(y_min=0.0, y_max=1.0, out_of_bounds="clip")
            iso.fit(P[:, j], (y == j).astype(float))
            self.thresholds_.append((iso.X_thresholds_.copy(), iso.y_thresholds_.copy()))

    def _transform(self, P: np.ndarray) -> np.ndarray:
        cols = [np.interp(P[:, j], xs, ys) for j, (xs, ys) in enumerate(self.thresholds_)]
        return np.stack(cols, axis=1)

    def get_state(self) -> dict[str, Any]:
        check_is_fitted(self, "thresholds_")
        return {"thresholds": [[xs.tolist(), ys.tolist()] for xs, ys in self.thresholds_]}

    def _set(self, params: dict[str, Any]) -> None:
        self.thresholds_ = [
            (np.asarray(xs, dtype=float), np.asarray(ys, dtype=float))
            for xs, ys in params["thresholds"]
        ]


CALIBRATORS: dict[str, type[BaseCalibrator]] = {
    "temperature": TemperatureScaling,
    "vector": VectorScaling,
    "platt": PlattScaling,
    "isotonic": IsotonicCalibration,
}


def make_calibrator(method: str, classes: Sequence[Any] | None = None) -> BaseCalibrator:
    """A fresh calibrator by name: temperature, vector, platt or isotonic."""
    try:
        cls = CALIBRATORS[method]
    except KeyError:
        raise UsageError(
            f"unknown calibration method {method!r}; choose one of {sorted(CALIBRATORS)}"
        ) from None
    return cls(classes=list(classes) if classes is not None else None)
