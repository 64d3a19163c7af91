"""*tensor*: PyTorch tensor operations with shapes solved so every sampled call is valid.

The abstract state is each tensor's shape; parameter domains read the bound tensors' shapes
(a permutation of *their* dimensions, a split size dividing *their* size, a weight whose input
features match *their* last dimension). Input tensors and weights are preloaded as
``{"__tensor__": {"shape": [...], "seed": s}}`` and built by the setup code with a seeded
generator, so a test case is reproducible from JSON. Programs run on CPU; results are compared
with the tolerance in ``Runtime.tolerance`` (rtol 1e-4, atol 1e-5: float32 ops in another order,
e.g. ``cat`` then ``linear`` vs ``linear`` then ``cat``, differ in the last bits).
"""

from __future__ import annotations

from random import Random

from callbench.tracks.stateful.scenario import (
    AbsObject,
    Api,
    Initial,
    ObjectType,
    Param,
    Runtime,
    Scenario,
    World,
)


def _tensor_spec(shape: list[int], rng: Random) -> dict:
    return {"__tensor__": {"shape": list(shape), "seed": rng.randint(0, 10_000)}}


def _reseed(rng: Random, value: dict) -> dict:
    return {"__tensor__": {"shape": value["__tensor__"]["shape"], "seed": rng.randint(0, 10_000)}}


def _shape(o: AbsObject) -> list[int]:
    return list(o.attrs["shape"])


def _new(world: World, shape: list[int]) -> AbsObject:
    return world.create("tensor", shape=tuple(shape))


# -- domains ------------------------------------------------------------------------------------
def _perm(rng: Random, world: World, objs: dict) -> tuple[int, ...]:
    n = len(_shape(objs["input"]))
    dims = list(range(n))
    while dims == list(range(n)):
        rng.shuffle(dims)
    return tuple(dims)


def _two_dims(which: int):
    """dim0 draws a fresh pair of distinct dimensions; dim1 (drawn right after) takes the other."""

    def dom(rng: Random, world: World, objs: dict) -> int:
        if which == 0:
            world.data["pair"] = rng.sample(range(len(_shape(objs["input"]))), 2)
        return world.data["pair"][which]

    return dom


def _split_dim(rng: Random, world: World, objs: dict) -> int:
    shape = _shape(objs["input"])
    dims = [d for d, n in enumerate(shape) if _divisors(n)]
    d = rng.choice(dims)
    world.data["split_dim"] = d
    return d


def _divisors(n: int) -> list[int]:
    return [k for k in range(1, n) if n % k == 0 and n // k <= 4]


def _split_size(rng: Random, world: World, objs: dict) -> int:
    return rng.choice(_divisors(_shape(objs["input"])[world.data["split_dim"]]))


def _cat_dim(rng: Random, world: World, objs: dict) -> int:
    return rng.choice(_cat_dims(objs["first"], objs["second"]))


def _cat_dims(a: AbsObject, b: AbsObject) -> list[int]:
    sa, sb = _shape(a), _shape(b)
    if len(sa) != len(sb):
        return []
    return [d for d in range(len(sa)) if all(x == y for i, (x, y) in enumerate(zip(sa, sb, strict=True)) if i != d)]


def _conv_weight(rng: Random, world: World, objs: dict) -> dict:
    _, c, h, w = _shape(objs["input"])
    k = rng.randint(1, min(3, h, w))
    return _tensor_spec([rng.randint(1, 4), c, k, k], rng)


def _linear_weight(rng: Random, world: World, objs: dict) -> dict:
    return _tensor_spec([rng.randint(1, 6), _shape(objs["input"])[-1]], rng)


# -- effects ------------------------------------------------------------------------------------
def _permute(world: World, a: dict, o: dict) -> AbsObject:
    s = _shape(o["input"])
    return _new(world, [s[d] for d in a["dims"]])


def _transpose(world: World, a: dict, o: dict) -> AbsObject:
    s = _shape(o["input"])
    s[a["dim0"]], s[a["dim1"]] = s[a["dim1"]], s[a["dim0"]]
    return _new(world, s)


def _split(world: World, a: dict, o: dict) -> list[AbsObject]:
    s = _shape(o["input"])
    n = s[a["dim"]] // a["split_size"]
    s[a["dim"]] = a["split_size"]
    return [_new(world, s) for _ in range(n)]


def _cat(world: World, a: dict, o: dict) -> AbsObject:
    s = _shape(o["first"])
    s[a["dim"]] += _shape(o["second"])[a["dim"]]
    return _new(world, s)


def _conv2d(world: World, a: dict, o: dict) -> AbsObject:
    n, _, h, w = _shape(o["input"])
    oc, _, k, _ = a["weight"]["__tensor__"]["shape"]
    return _new(world, [n, oc, h - k + 1, w - k + 1])


def _linear(world: World, a: dict, o: dict) -> AbsObject:
    s = _shape(o["input"])
    return _new(world, s[:-1] + [a["weight"]["__tensor__"]["shape"][0]])


_T = "tensor"
_ANY = Param("input", object_type=_T)
_APIS = (
    Api(
        "permute",
        (_ANY, Param("dims", domain=_perm, literal=True)),
        "torch.permute($input, $dims)",
        _permute,
        "object",
        "permuted",
        "reorder the dimensions of {input} as {dims}",
        target="input",
        returns_type=_T,
        writes=False,  # a new tensor; the input is unchanged (an unused result is a dead computation)
        precondition=lambda w, o: len(_shape(o["input"])) >= 2,
    ),
    Api(
        "transpose",
        (_ANY, Param("dim0", domain=_two_dims(0), literal=True), Param("dim1", domain=_two_dims(1), literal=True)),
        "torch.transpose($input, $dim0, $dim1)",
        _transpose,
        "object",
        "transposed",
        "swap dimensions {dim0} and {dim1} of {input}",
        target="input",
        returns_type=_T,
        writes=False,  # a new tensor; the input is unchanged (an unused result is a dead computation)
        precondition=lambda w, o: len(_shape(o["input"])) >= 2,
    ),
    Api(
        "split",
        (
            _ANY,
            Param("dim", domain=_split_dim, literal=True),
            Param("split_size", domain=_split_size, var="chunk_size", describe="the chunk size", resample=False),
        ),
        "list(torch.split($input, $split_size, dim=$dim))",
        _split,
        "objects",
        "chunks",
        "split {input} into chunks of size {split_size} along dimension {dim}",
        target="input",
        returns_type=_T,
        writes=False,  # a new tensor; the input is unchanged (an unused result is a dead computation)
        precondition=lambda w, o: any(_divisors(n) for n in _shape(o["input"])),
    ),
    Api(
        "cat",
        (Param("first", object_type=_T), Param("second", object_type=_T), Param("dim", domain=_cat_dim, literal=True)),
        "torch.cat([$first, $second], dim=$dim)",
        _cat,
        "object",
        "joined",
        "concatenate {first} and {second} along dimension {dim}",
        target="first",
        returns_type=_T,
        writes=False,  # a new tensor; the input is unchanged (an unused result is a dead computation)
        precondition=lambda w, o: bool(_cat_dims(o["first"], o["second"])),
    ),
    Api(
        "conv2d",
        (
            Param("input", object_type=_T, where=lambda t, w, o: len(_shape(t)) == 4),
            Param("weight", domain=_conv_weight, describe="the convolution weight", perturb=_reseed),
        ),
        "torch.nn.functional.conv2d($input, $weight)",
        _conv2d,
        "object",
        "conv",
        "convolve {input} with the kernel {weight}",
        target="input",
        returns_type=_T,
        writes=False,  # a new tensor; the input is unchanged (an unused result is a dead computation)
    ),
    Api(
        "linear",
        (_ANY, Param("weight", domain=_linear_weight, describe="the weight matrix", perturb=_reseed)),
        "torch.nn.functional.linear($input, $weight)",
        _linear,
        "object",
        "projected",
        "apply a linear map with weight {weight} (no bias) to {input}",
        target="input",
        returns_type=_T,
        writes=False,  # a new tensor; the input is unchanged (an unused result is a dead computation)
    ),
)


def _initial(rng: Random) -> Initial:
    world = World()
    preload: dict = {}
    alts: dict = {}
    shapes = [[rng.randint(1, 2), rng.choice([2, 3, 4]), rng.choice([4, 6]), rng.choice([4, 6])]]
    shapes.append(list(shapes[0]) if rng.random() < 0.5 else [rng.choice([2, 4]), rng.choice([3, 6])])
    words = {}
    for i, shape in enumerate(shapes, 1):
        var = f"x_{i}"
        obj = world.create(_T, shape=tuple(shape))
        obj.expr = var
        preload[var] = _tensor_spec(shape, rng)
        alts[var] = [_reseed(rng, preload[var]) for _ in range(3)]
        words[var] = "an input tensor"
    return Initial(world, preload, inputs=words, alternatives=alts)


# "__load__" preloads are the published StateEval's init_load_info objects, in its JSON form:
# {"__tensor__": true, "shape", "dtype" (numpy's, e.g. "<f4"), "data_b64" (the raw bytes)} or a
# list (made a tensor), rebuilt from the bytes (never unpickled), as upstream's loader does; like
# upstream, each is cloned, so anything else is refused.
_SETUP = """
import base64
import torch

__DTYPES = {"f2": torch.float16, "f4": torch.float32, "f8": torch.float64, "i1": torch.int8, "i2": torch.int16,
            "i4": torch.int32, "i8": torch.int64, "u1": torch.uint8, "b1": torch.bool}

def __decode_load__(v):
    if isinstance(v, dict):
        if v.get("__tensor__") is True:
            dtype = __DTYPES[v["dtype"].lstrip("<|=")]
            raw = bytearray(base64.b64decode(v["data_b64"], validate=True))
            flat = torch.frombuffer(raw, dtype=dtype) if raw else torch.empty(0, dtype=dtype)
            return flat.reshape(v["shape"]).clone()
        return {k: __decode_load__(x) for k, x in v.items()}
    if isinstance(v, list):
        return [__decode_load__(x) for x in v]
    return v

def __from_json__(v):
    if isinstance(v, dict) and set(v) == {"__tensor__"}:
        spec = v["__tensor__"]
        gen = torch.Generator().manual_seed(int(spec["seed"]))
        return torch.randn(*spec["shape"], generator=gen)
    if isinstance(v, dict) and set(v) == {"__load__"}:
        value = __decode_load__(v["__load__"])
        if isinstance(value, list):
            value = torch.tensor(value)
        return value.clone()
    return v

for __name in list(globals().get("__preload__", ())):
    globals()[__name] = __from_json__(globals()[__name])

def __to_json__(v):
    if isinstance(v, torch.Tensor):
        return {"__tensor__": {"shape": list(v.shape), "dtype": str(v.dtype).removeprefix("torch."), "data": v.detach().flatten().tolist()}}
    if isinstance(v, (list, tuple)):
        return [__to_json__(x) for x in v]
    if isinstance(v, torch.Size):
        return list(v)
    return v
"""

DOC = """\
# Tensor operations (PyTorch)

`torch` is imported. Input tensors are preloaded as variables (float32, CPU).
Use the functional forms below; each returns a new tensor and never modifies its input.

- `torch.permute(t, dims)` - reorder dimensions; `dims` is a tuple with every dimension once.
- `torch.transpose(t, dim0, dim1)` - swap two dimensions.
- `list(torch.split(t, split_size, dim=d))` - chunks of `split_size` along `d` (a list of tensors).
- `torch.cat([a, b], dim=d)` - join along `d`; all other dimensions must match.
- `torch.nn.functional.conv2d(x, weight)` - 2-D convolution, `x` is (N, C, H, W), `weight`
  (out_channels, C, kH, kW), no padding, stride 1, no bias.
- `torch.nn.functional.linear(x, weight)` - `x @ weight.T`; `weight` is (out_features, in_features).
- `t.shape[d]` is the size of dimension `d`; `t.dim()` the number of dimensions.
"""

SCENARIO = Scenario(
    name="tensor",
    description="PyTorch tensor operations on CPU (permute, transpose, split, cat, conv2d, linear).",
    object_types=(
        ObjectType(
            _T,
            "a torch.Tensor",
            probes={"size of dimension 0": ("{var}.shape[0]", lambda o: o.attrs["shape"][0])},
        ),
    ),
    apis=_APIS,
    runtime=Runtime(
        setup=_SETUP,
        finalize=None,
        call_roots=("torch",),
        doc=DOC,
        memory_limit="data",
        tolerance=(1e-4, 1e-5),
        requires=(("torch", "hf"),),
    ),
    initial=_initial,
)
