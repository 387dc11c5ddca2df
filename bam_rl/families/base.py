"""Natural-parameter beliefs and the base class of every conjugate family.

A conjugate exponential family is handled entirely in one linear coordinate system: a
*belief* (prior or posterior over θ) and the *sufficient statistics* of a datum ``D_j`` live
in the same space, so

* the BAM prior for readout weights ``w`` is ``η0 + Σ_j w_j s_j`` (:meth:`NaturalParams.__add__`,
  :meth:`NaturalParams.__mul__`, :meth:`NaturalParams.weighted_sum`),
* the posterior after ``D`` is ``η + s``,
* the log marginal likelihood is ``log p(D | η) = A(η + s) − A(η) + log h(D)``, ``A`` the
  log-normaliser of the belief and ``log h(D)`` the data's base measure (carried by the
  statistics in :attr:`NaturalParams.log_h`),
* ``KL(p ‖ q)`` is the Bregman divergence of ``A``:
  ``A(η_q) − A(η_p) − ⟨η_q − η_p, ∇A(η_p)⟩``.

The coordinates of a family need only be an affine image of the canonical natural parameters
(for example ``(α, β)`` for a Beta instead of ``(α − 1, β − 1)``): sums, the Bregman form and
the gradient identity ``∂/∂w_j log p(D_t | η(w)) = ⟨s_j, ∇A(η(w) + s_t) − ∇A(η(w))⟩`` are all
invariant under such a change of coordinates.

Every evaluation is batched over the leading axes of a :class:`NaturalParams`; a family's
``field_shapes`` give the trailing (event) shape of each field.
"""

from __future__ import annotations

import inspect
import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import numpy as np

from bam_rl.checks import all_finite, as_float_array, check_positive_real

Fields = dict[str, np.ndarray]
#: A value of θ (a moment or a draw): one array, or a tuple of arrays for families with several
#: parameters (NormalGamma's ``(μ, τ)``, the Normal-inverse-gamma regression's ``(M, σ²)``).
Theta = np.ndarray | tuple[np.ndarray, ...]
#: A numpy ``size`` argument: ``None`` (one draw per belief), an int or a shape.
Size = int | tuple[int, ...] | None


def _as_field(name: str, value: Any) -> np.ndarray:
    """A field (or ``log_h``) as a float64 array; ``ValueError`` for non-numeric values and
    for NaN or infinite entries (one non-finite statistic would poison every later belief)."""
    if type(value) is np.ndarray and value.dtype == np.float64:
        array = value
    else:
        if isinstance(value, (str, bytes)):
            raise ValueError(f"NaturalParams field {name!r} must be numeric, got {value!r}")
        try:
            array = np.asarray(value, dtype=np.float64)
        except (TypeError, ValueError) as error:
            raise ValueError(
                f"NaturalParams field {name!r} must be numeric, got {value!r}"
            ) from error
    if not all_finite(array):
        raise ValueError(
            f"NaturalParams field {name!r} must be finite: got NaN or inf (a "
            f"non-finite input, or statistics or beliefs whose arithmetic "
            f"overflowed float64)"
        )
    return array


def scalar_of(value: Any) -> float | None:
    """``value`` as a Python float when it is one number — a float (NumPy's included) or a 0-d
    array — else ``None``. The families' belief checks compare one belief's fields (a rule's,
    on every update) as Python floats, the comparisons of their array path without its
    reductions, and hand anything else, a failure included, to the array path."""
    if isinstance(value, float):
        return value
    if type(value) is np.ndarray and not value.ndim:
        return float(value)
    return None


def contract(weights: np.ndarray, array: np.ndarray) -> np.ndarray:
    """``np.tensordot(weights, array, axes=([-1], [0]))``, computed exactly as numpy does it
    (the same reshapes and the same ``np.dot``, so bit for bit the same result) without its
    generic axis handling, which costs more than the product for the memories of a bandit
    arm's readout on every step."""
    lead, event = weights.shape[:-1], array.shape[1:]
    product = np.dot(
        weights.reshape(math.prod(lead), weights.shape[-1]),
        array.reshape(array.shape[0], math.prod(event)),
    )
    return product.reshape(lead + event)


class NaturalParams:
    """Natural parameters of a belief, or sufficient statistics of data, for one family.

    Instances are immutable by convention: every operation returns a new object.

    Attributes:
        family: The :class:`ConjugateFamily` these parameters belong to.
        fields: Arrays of shape ``batch_shape + family.field_shapes[name]``.
        log_h: Log base measure ``log h(D)`` of the data summarised, shape ``batch_shape``.
            Zero for beliefs built from the prior alone; it adds like the fields.
    """

    __slots__ = ("_batch_shape", "family", "fields", "log_h")
    # numpy defers `array * params` to __rmul__ instead of building an object array
    __array_ufunc__ = None

    def __init__(self, family: ConjugateFamily, fields: Mapping[str, Any], log_h: Any = 0.0):
        if not isinstance(family, ConjugateFamily):
            raise ValueError(f"family must be a ConjugateFamily, got {type(family).__name__}")
        self.family = family
        shapes = family.field_shapes
        if (
            not isinstance(fields, Mapping)
            or len(fields) != len(shapes)
            or any(name not in fields for name in shapes)
        ):
            given = sorted(fields) if isinstance(fields, Mapping) else type(fields).__name__
            raise ValueError(
                f"fields must be a mapping with exactly the fields "
                f"{list(shapes)} of {family!r}, got {given}"
            )
        converted: Fields = {}
        for name in shapes:
            converted[name] = _as_field(name, fields[name])
        self.fields = converted
        self._batch_shape = self._infer_batch_shape()
        log_h = _as_field("log_h", log_h)
        if log_h.shape != self._batch_shape:
            try:
                log_h = np.broadcast_to(log_h, self._batch_shape)
            except ValueError as error:
                raise ValueError(
                    f"log_h has shape {log_h.shape}, which does not broadcast to "
                    f"the batch shape {self._batch_shape}"
                ) from error
        self.log_h = log_h

    @classmethod
    def _trusted(
        cls, family: ConjugateFamily, fields: Fields, log_h: np.ndarray, batch_shape: tuple
    ) -> NaturalParams:
        """An instance over arrays already checked (float64, finite, shapes agreeing), built
        without checking them again: for containers that validated every entry when it was
        stored (:class:`~bam_rl.memory.Memory` reads its records this way on every step)."""
        params = object.__new__(cls)
        params.family = family
        params.fields = fields
        params._batch_shape = batch_shape
        params.log_h = log_h
        return params

    # ------------------------------------------------------------------ shape
    def _infer_batch_shape(self) -> tuple[int, ...]:
        shapes = []
        for name, event in self.family.field_shapes.items():
            shape = self.fields[name].shape
            cut = len(shape) - len(event)
            if cut < 0 or shape[cut:] != tuple(event):
                expected = ", ".join(map(str, event))
                raise ValueError(f"field {name!r} has shape {shape}, expected (..., {expected})")
            shapes.append(shape[:cut])
        first = shapes[0]
        if all(shape == first for shape in shapes):
            return first
        try:
            return np.broadcast_shapes(*shapes)
        except ValueError as error:
            raise ValueError(f"the batch shapes of the fields {shapes} do not broadcast") from error

    @property
    def batch_shape(self) -> tuple[int, ...]:
        """Leading shape shared by every field (``()`` for a single belief or datum)."""
        return self._batch_shape

    def _full(self, name: str) -> np.ndarray:
        """Field ``name`` broadcast to the full batch shape (a view when it already is)."""
        array = self.fields[name]
        full = self._batch_shape + tuple(self.family.field_shapes[name])
        return array if array.shape == full else np.broadcast_to(array, full)

    def __len__(self) -> int:
        shape = self.batch_shape
        if not shape:
            raise TypeError("len() of an unbatched NaturalParams")
        return shape[0]

    def __getitem__(self, index: Any) -> NaturalParams:
        batch = self.batch_shape
        if not batch:
            raise IndexError("cannot index an unbatched NaturalParams")
        fields = {name: self._full(name)[index] for name in self.fields}
        return NaturalParams(self.family, fields, self.log_h[index])

    def broadcast_to(self, batch_shape: tuple[int, ...]) -> NaturalParams:
        """Returns a view broadcast to ``batch_shape`` (no copy)."""
        fields = {
            name: np.broadcast_to(self.fields[name], tuple(batch_shape) + tuple(event))
            for name, event in self.family.field_shapes.items()
        }
        return NaturalParams(self.family, fields, np.broadcast_to(self.log_h, batch_shape))

    # ------------------------------------------------------------- arithmetic
    def _check_compatible(self, other: NaturalParams) -> None:
        if not isinstance(other, NaturalParams):
            raise ValueError(f"expected NaturalParams, got {type(other).__name__}")
        self.family.check_compatible(other.family)

    def __add__(self, other: NaturalParams) -> NaturalParams:
        self._check_compatible(other)
        fields = {name: self.fields[name] + other.fields[name] for name in self.fields}
        log_h = self.log_h + other.log_h
        if type(other) is NaturalParams and not self._batch_shape and not other._batch_shape:
            # one belief plus one datum (every update of a rule): the fields of both are
            # checked float64 arrays of the family's event shapes, so their sums are too; only
            # finiteness is left to check (an overflow takes the general path, which refuses)
            checked = {}
            for name, value in fields.items():
                array = np.asarray(value)
                if not all_finite(array):
                    break
                checked[name] = array
            else:
                log_h = np.asarray(log_h)
                if all_finite(log_h):
                    return NaturalParams._trusted(self.family, checked, log_h, ())
        return NaturalParams(self.family, fields, log_h)

    def __mul__(self, weight: Any) -> NaturalParams:
        """Tempers by a non-negative scalar or a per-batch array of weights."""
        weight = as_float_array("weight", weight)
        if np.any(weight < 0):
            raise ValueError(f"weight must be >= 0, got {weight!r}")
        fields = {}
        for name, event in self.family.field_shapes.items():
            w = weight.reshape(weight.shape + (1,) * len(event))
            fields[name] = w * self.fields[name]
        return NaturalParams(self.family, fields, weight * self.log_h)

    __rmul__ = __mul__

    def sum(self, axis: int = 0) -> NaturalParams:
        """Adds the statistics along one batch axis (e.g. merges data into one datum)."""
        batch = self.batch_shape
        if not batch:
            return self
        axis = axis % len(batch)
        fields = {name: self._full(name).sum(axis=axis) for name in self.fields}
        return NaturalParams(self.family, fields, self.log_h.sum(axis))

    def weighted_sum(self, weights: Any) -> NaturalParams:
        """Returns ``Σ_j weights[..., j] · self[j]`` for a batch of ``m`` statistics.

        Args:
            weights: Array of shape ``(..., m)`` with entries in [0, 1]; one weight vector per
                leading index, so many candidate readouts are formed in one call.

        Returns:
            NaturalParams with batch shape ``weights.shape[:-1]`` (no base prior added).
        """
        batch = self.batch_shape
        if len(batch) != 1:
            raise ValueError(f"weighted_sum needs a batch of shape (m,), got {batch}")
        weights = as_float_array("weights", weights)
        if weights.ndim == 0 or weights.shape[-1] != batch[0]:
            raise ValueError(f"weights must have shape (..., {batch[0]}), got {weights.shape}")
        if weights.size and (weights.min() < 0 or weights.max() > 1):  # finite (checked above)
            raise ValueError("weights must lie in [0, 1]")
        fields = {name: contract(weights, self._full(name)) for name in self.fields}
        return NaturalParams(self.family, fields, weights @ self.log_h)

    def inner(self, gradient: Mapping[str, np.ndarray]) -> np.ndarray:
        """Pairs these statistics with a gradient of ``A``: ``Σ_fields ⟨self, gradient⟩``."""
        total = 0.0
        for name, event in self.family.field_shapes.items():
            product = self.fields[name] * gradient[name]
            if event:
                product = product.sum(axis=tuple(range(-len(event), 0)))
            total = total + product
        return np.asarray(total)

    # ------------------------------------------------------------ conveniences
    @property
    def mean(self) -> Theta:
        """Posterior mean of θ under this belief (batched)."""
        return self.family.mean(self)

    @property
    def variance(self) -> Theta:
        """Posterior variance of θ (element-wise) under this belief (batched)."""
        return self.family.variance(self)

    def copy(self) -> NaturalParams:
        return NaturalParams(
            self.family, {k: v.copy() for k, v in self.fields.items()}, self.log_h.copy()
        )

    def allclose(self, other: NaturalParams, rtol: float = 1e-10, atol: float = 1e-12) -> bool:
        """True when every field matches ``other`` to the given tolerances."""
        self._check_compatible(other)
        return all(
            np.allclose(self.fields[k], other.fields[k], rtol=rtol, atol=atol) for k in self.fields
        )

    def __repr__(self) -> str:
        body = ", ".join(
            f"{k}={np.array2string(v, precision=4, threshold=6)}" for k, v in self.fields.items()
        )
        return f"NaturalParams[{type(self.family).__name__}, batch={self.batch_shape}]({body})"


def _finite_result(what: str, value: Any) -> np.ndarray:
    """``value`` as an array, or ``ValueError`` naming ``what`` when it is NaN or infinite:
    with finite, proper inputs that only happens when float64 overflows (data or beliefs too
    large in magnitude for this family's coordinates)."""
    array = np.asarray(value, dtype=np.float64)
    if not all_finite(array):
        raise ValueError(
            f"{what} is not finite: the computation overflowed float64 (data or "
            f"beliefs too large in magnitude; rescale or centre the data)"
        )
    return array


def make_stats(
    family: ConjugateFamily, what: str, fields: Mapping[str, Any], log_h: Any = 0.0
) -> NaturalParams:
    """The statistics a family's ``stats`` computed from the data ``what``; ``ValueError``
    naming ``what`` when they overflowed float64 (data too large in magnitude)."""
    with np.errstate(over="ignore", invalid="ignore"):
        fields = {name: np.asarray(value, dtype=np.float64) for name, value in fields.items()}
        log_h = np.asarray(log_h, dtype=np.float64)
    for name, value in (*fields.items(), ("log_h", log_h)):
        if not all_finite(value):
            raise ValueError(
                f"{what}: the sufficient statistics of {family!r} overflow float64 "
                f"(statistic {name!r} is not finite); the data are too large in "
                f"magnitude for this family, rescale them"
            )
    return NaturalParams(family, fields, log_h)


def _join(items: Iterable[NaturalParams], join: Callable[..., np.ndarray]) -> NaturalParams:
    items = list(items)
    if not items:
        raise ValueError("items must contain at least one NaturalParams")
    first = items[0]
    for other in items[1:]:
        first._check_compatible(other)
    fields = {name: join([p._full(name) for p in items]) for name in first.fields}
    return NaturalParams(first.family, fields, join([p.log_h for p in items]))


def stack(items: Iterable[NaturalParams]) -> NaturalParams:
    """Stacks unbatched (or equally batched) parameters along a new leading axis."""
    return _join(items, np.stack)


def concatenate(items: Iterable[NaturalParams]) -> NaturalParams:
    """Concatenates batched parameters along their leading axis."""
    return _join(items, np.concatenate)


class ConjugateFamily(ABC):
    """A conjugate prior / likelihood pair handled through natural parameters.

    Subclasses set :attr:`field_shapes`, build :attr:`prior` and implement
    :meth:`stats`, :meth:`log_partition_fields`, :meth:`grad_log_partition_fields`, :meth:`mean`,
    :meth:`variance`, :meth:`sample` and :meth:`_check_belief`. The log marginal likelihood
    and the KL divergence follow generically (subclasses may override the KL with a closed
    form that is cheaper or better conditioned).
    """

    #: Event shape of every natural-parameter field, in a fixed order.
    field_shapes: dict[str, tuple[int, ...]]
    #: The base prior p(θ).
    prior: NaturalParams
    #: Constructor arguments (recorded automatically), so a family can be rebuilt from a file.
    init_kwargs: dict[str, Any]

    def __new__(cls, *args: Any, **kwargs: Any) -> ConjugateFamily:
        self = super().__new__(cls)
        bound = inspect.signature(cls.__init__).bind(self, *args, **kwargs)
        bound.apply_defaults()
        self.init_kwargs = {k: v for k, v in list(bound.arguments.items())[1:]}
        return self

    def __copy__(self) -> ConjugateFamily:
        return self  # families are immutable: copies of a belief share their family

    def __deepcopy__(self, memo: dict[int, Any]) -> ConjugateFamily:
        return self

    # ------------------------------------------------------------- identity
    #: Settings besides the field shapes that the statistics depend on, named in the
    #: signature (``noise_var`` where they are scaled by 1/σ²: families that differ in one
    #: cannot mix statistics).
    _SIGNATURE_SETTINGS: tuple[str, ...] = ()

    def signature(self) -> tuple:
        """What statistics depend on: families with equal signatures can mix statistics."""
        settings = tuple((name, getattr(self, name)) for name in self._SIGNATURE_SETTINGS)
        return (type(self).__name__, tuple(self.field_shapes.items()), *settings)

    def check_compatible(self, other: ConjugateFamily, name: str = "statistics") -> None:
        """Raises ``ValueError`` unless ``other`` produces statistics in the same space."""
        if other is self:
            return
        if not isinstance(other, ConjugateFamily) or self.signature() != other.signature():
            raise ValueError(
                f"{name}: parameters of {other!r} cannot be combined with {self!r} "
                "(family or dimension differ)"
            )

    def check_params(self, params: NaturalParams, name: str = "belief") -> None:
        """Raises ``ValueError`` unless ``params`` belongs to this family."""
        if not isinstance(params, NaturalParams):
            raise ValueError(f"{name} must be a NaturalParams, got {type(params).__name__}")
        self.check_compatible(params.family, name)

    def zeros(self, batch_shape: tuple[int, ...] = ()) -> NaturalParams:
        """Statistics of no data (the additive identity)."""
        fields = {
            name: np.zeros(tuple(batch_shape) + tuple(event))
            for name, event in self.field_shapes.items()
        }
        return NaturalParams(self, fields)

    # ---------------------------------------------------------------- maths
    @abstractmethod
    def stats(self, *args: Any, **kwargs: Any) -> NaturalParams:
        """Sufficient statistics of one datum (a batch of observations)."""

    @abstractmethod
    def log_partition_fields(self, fields: Fields) -> np.ndarray:
        """``A(η)`` over the batch, with the normalising constants of θ's density."""

    @abstractmethod
    def grad_log_partition_fields(self, fields: Fields) -> Fields:
        """``∇A(η)`` in this family's coordinates (the mean parameters ``E[T(θ)]``)."""

    @abstractmethod
    def _check_belief(self, fields: Fields) -> None:
        """Raises ``ValueError`` when ``fields`` is not a proper (normalisable) belief."""

    @abstractmethod
    def mean(self, belief: NaturalParams) -> Theta:
        """``E[θ]`` under ``belief``."""

    @abstractmethod
    def variance(self, belief: NaturalParams) -> Theta:
        """Element-wise ``Var[θ]`` under ``belief``."""

    def sample(
        self,
        belief: NaturalParams,
        rng: np.random.Generator,
        size: Size = None,
    ) -> Theta:
        """Draws θ from ``belief`` (``size`` as in numpy).

        Raises:
            ValueError: For a belief that is no distribution of this family (e.g. a
                non-positive concentration or precision).
        """
        self._check_belief(belief.fields)
        return self._sample(belief, rng, size)

    @abstractmethod
    def _sample(self, belief: NaturalParams, rng: np.random.Generator, size: Size) -> Theta:
        """The family's draw from a checked belief (:meth:`sample` checks it)."""

    def check_belief(self, belief: NaturalParams, name: str = "belief") -> None:
        """Raises ``ValueError`` naming ``name`` unless ``belief`` is a proper belief of this
        family (its fields are finite by construction; a family adds its own conditions, e.g.
        positive concentrations, and the precision checks of :class:`NormalGamma`)."""
        self.check_params(belief, name)
        try:
            self._check_belief(belief.fields)
        except ValueError as error:
            raise ValueError(f"{name}: {error}") from error

    def log_partition(self, belief: NaturalParams) -> np.ndarray:
        """Log-normaliser ``A(η)`` of ``belief`` (batched).

        Raises:
            ValueError: For an improper belief, or when ``A`` overflows float64.
        """
        self.check_params(belief)
        self._check_belief(belief.fields)
        return _finite_result("log_partition", self.log_partition_fields(belief.fields))

    def grad_log_partition(self, belief: NaturalParams) -> Fields:
        """``∇A(η)``, the mean parameters of ``belief`` in this family's coordinates."""
        self.check_params(belief)
        self._check_belief(belief.fields)
        grad = self.grad_log_partition_fields(belief.fields)
        for name, value in grad.items():
            _finite_result(f"grad_log_partition[{name!r}]", value)
        return grad

    def prepare_datum(self, s: NaturalParams) -> Any:
        """Whatever :meth:`log_marginal_fields` needs of one datum, computed once per datum
        (the statistics themselves unless a family overrides it)."""
        return s

    def log_marginal_fields(self, fields: Fields, datum: Any) -> np.ndarray:
        """``log p(D | η)`` for raw belief fields (batched, unchecked) and one prepared datum
        (:meth:`prepare_datum`): ``A(η + s) − A(η) + log h(D)`` unless a family overrides it
        with a better-conditioned form. The readout selectors score candidates with it."""
        post = {k: fields[k] + datum.fields[k] for k in fields}
        return self.log_partition_fields(post) - self.log_partition_fields(fields) + datum.log_h

    def posterior(self, belief: NaturalParams, s: NaturalParams) -> NaturalParams:
        """Belief after observing the datum with statistics ``s``."""
        self.check_params(s, "s")
        return belief + s

    def log_marginal(self, belief: NaturalParams, s: NaturalParams) -> np.ndarray | float:
        """``log p(D | belief)`` for a datum with statistics ``s``; broadcasts over batches.

        Returns a float for unbatched inputs, else an array of the broadcast batch shape.
        """
        self.check_params(belief)
        self.check_params(s, "s")
        self._check_belief(belief.fields)
        post = belief + s
        with np.errstate(all="ignore"):
            value = (
                self.log_partition_fields(post.fields)
                - self.log_partition_fields(belief.fields)
                + s.log_h
            )
        value = _finite_result("log_marginal", value)
        return value if value.ndim else float(value)

    def kl(self, p: NaturalParams, q: NaturalParams) -> np.ndarray | float:
        """``KL(p ‖ q)`` between beliefs, the Bregman divergence of ``A``; batched."""
        self.check_params(p, "p")
        self.check_params(q, "q")
        self._check_belief(p.fields)
        self._check_belief(q.fields)
        grad_p = self.grad_log_partition_fields(p.fields)
        diff = {k: q.fields[k] - p.fields[k] for k in self.field_shapes}
        diff_params = NaturalParams(self, diff)
        with np.errstate(all="ignore"):
            value = (
                self.log_partition_fields(q.fields)
                - self.log_partition_fields(p.fields)
                - diff_params.inner(grad_p)
            )
        value = _finite_result("kl", value)
        # KL >= 0; the Bregman form can round to tiny negatives when A(q) ≈ A(p) is large
        value = np.maximum(value, 0.0)
        return value if value.ndim else float(value)

    def __repr__(self) -> str:
        return self._repr()

    def _repr(self, **settings: float) -> str:
        """``Name(key=value, ...)``: the class name and the scalar ``settings`` (``:g``)."""
        body = ", ".join(f"{name}={value:g}" for name, value in settings.items())
        return f"{type(self).__name__}({body})"


class ScalarPairPrior(ConjugateFamily):
    """A family whose prior is two positive scalars, ``alpha`` and ``beta``, which are its
    fields themselves (Beta-Binomial's pseudo-counts, Gamma-Poisson's shape and rate): the
    constructor's checks, :attr:`prior` and the ``repr`` they share."""

    field_shapes = {"alpha": (), "beta": ()}

    def __init__(self, alpha: float = 1.0, beta: float = 1.0):
        self.alpha = check_positive_real("alpha", alpha)
        self.beta = check_positive_real("beta", beta)
        self.prior = NaturalParams(self, {"alpha": self.alpha, "beta": self.beta})

    def __repr__(self) -> str:
        return self._repr(alpha=self.alpha, beta=self.beta)
