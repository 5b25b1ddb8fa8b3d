"""TensorBoard logging: ``SummaryWriter`` writes event files that ``tensorboard`` reads.

The record framing and the protocol buffers come from the ``tensorboard`` package
itself (its ``EventFileWriter`` and ``tensorboard.compat.proto`` messages): this
module only turns ember tensors into those messages.  Images are encoded as PNG with
Pillow, figures drawn with matplotlib.  Install with ``pip install 'ember[viz]'``.

``add_graph(model, x)`` runs ``model(x)`` once and writes its autograd graph as a
GraphDef: one node per backward node (named by ``grad_fn.name()`` and placed in
the scope of the module that ran the op, e.g. ``Net/Linear[fc1]/AddmmBackward0``),
one node per parameter, inputs following the gradient edges backwards (so the
picture reads from parameters to output, as the forward did).
"""

from __future__ import annotations

import math
import os
import socket
import time
from datetime import datetime

import numpy as np

from .._core.tensor import Tensor
from ..ops._observer import Observer, run_module, run_op
from .._core.accumulate import AccumulateGrad
from .._core.grad_mode import enable_grad

__all__ = ["SummaryWriter"]


def _tb():
    """The tensorboard modules used here (imported on first use)."""
    try:
        from tensorboard.compat.proto import (
            attr_value_pb2, event_pb2, graph_pb2, node_def_pb2, summary_pb2, tensor_pb2,
            tensor_shape_pb2, types_pb2, versions_pb2,
        )
        from tensorboard.summary.writer.event_file_writer import EventFileWriter
    except ImportError:
        raise ImportError("ember.utils.tensorboard needs the `tensorboard` package: "
                          "pip install 'ember[viz]' (or pip install tensorboard)") from None
    return dict(attr=attr_value_pb2, event=event_pb2, graph=graph_pb2, node=node_def_pb2,
                summary=summary_pb2, tensor=tensor_pb2, shape=tensor_shape_pb2,
                types=types_pb2, versions=versions_pb2, EventFileWriter=EventFileWriter)


def _numpy(x) -> np.ndarray:
    if isinstance(x, Tensor):
        return x.detach().cpu().numpy()
    if hasattr(x, "get") and not isinstance(x, (dict, np.ndarray)):  # a CuPy array
        return x.get()
    return np.asarray(x)


def _scalar(x) -> float:
    value = _numpy(x)
    if value.size != 1:
        raise ValueError(f"add_scalar: expected a single number, got shape {value.shape}")
    return float(value.reshape(()))


# ---------------------------------------------------------------------------
# images

def _to_hwc(img: np.ndarray, dataformats: str) -> np.ndarray:
    """An image in `dataformats` (CHW, HWC, HW, ...) as HWC with 1, 3 or 4 channels."""
    fmt = dataformats.upper()
    if len(fmt) != img.ndim or set(fmt) - set("NCHW"):
        raise ValueError(f"add_image: dataformats {dataformats!r} does not fit an image of "
                         f"shape {img.shape}")
    if "C" not in fmt:
        img = img[..., None]
        fmt += "C"
    img = np.transpose(img, [fmt.index(c) for c in "HWC"])
    if img.shape[2] == 2:
        raise ValueError("add_image: an image needs 1, 3 or 4 channels, got 2")
    return img


def _to_uint8(img: np.ndarray) -> np.ndarray:
    """Floats are taken to be in [0, 1]; integers in [0, 255]."""
    if img.dtype == np.uint8:
        return img
    if img.dtype.kind == "f":
        return (np.clip(img, 0.0, 1.0) * 255.0 + 0.5).astype(np.uint8)
    return np.clip(img, 0, 255).astype(np.uint8)


def _grid(images: np.ndarray, fmt: str, padding: int = 2) -> np.ndarray:
    """NCHW-like batch -> one HWC image with the images tiled in rows."""
    fmt = fmt.upper()
    if "N" not in fmt:
        raise ValueError(f"add_images: dataformats {fmt!r} needs an N axis")
    n_axis = fmt.index("N")
    items = [_to_hwc(np.take(images, i, axis=n_axis), fmt.replace("N", ""))
             for i in range(images.shape[n_axis])]
    if not items:
        raise ValueError("add_images: no images")
    h, w, c = items[0].shape
    cols = math.ceil(math.sqrt(len(items)))
    rows = math.ceil(len(items) / cols)
    grid = np.zeros((rows * (h + padding) + padding, cols * (w + padding) + padding, c),
                    dtype=items[0].dtype)
    for idx, item in enumerate(items):
        r, q = divmod(idx, cols)
        y, x = padding + r * (h + padding), padding + q * (w + padding)
        grid[y:y + h, x:x + w] = item
    return grid


def _png(hwc: np.ndarray) -> bytes:
    try:
        from PIL import Image
    except ImportError:
        raise ImportError("add_image needs Pillow to encode PNG: pip install 'ember[viz]' "
                          "(or pip install pillow)") from None
    import io

    channels = hwc.shape[2]
    mode = {1: "L", 3: "RGB", 4: "RGBA"}[channels]
    array = hwc[..., 0] if channels == 1 else hwc
    buf = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(array), mode=mode).save(buf, format="PNG")
    return buf.getvalue()


def _figure_to_hwc(figure) -> np.ndarray:
    """A matplotlib figure drawn into an RGBA array (H, W, 4)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(figure) if not isinstance(figure.canvas, FigureCanvasAgg) \
        else figure.canvas
    canvas.draw()
    return np.asarray(canvas.buffer_rgba()).copy()


# ---------------------------------------------------------------------------
# histograms

def _tensorflow_edges() -> np.ndarray:
    """TensorFlow's default histogram edges: +-1e-12 growing by 10% up to 1e20, and 0."""
    pos = [1e-12]
    while pos[-1] < 1e20:
        pos.append(pos[-1] * 1.1)
    pos = np.array(pos)
    return np.concatenate([-pos[::-1], [0.0], pos])


def _histogram(values: np.ndarray, bins, max_bins):
    values = values.astype(np.float64).reshape(-1)
    if values.size == 0:
        raise ValueError("add_histogram: the input has no elements")
    if bins == "tensorflow":
        bins = _tensorflow_edges()
    counts, edges = np.histogram(values, bins=bins)
    if max_bins is not None and len(counts) > max_bins:
        factor = math.ceil(len(counts) / max_bins)
        pad = (-len(counts)) % factor
        counts = np.pad(counts, (0, pad)).reshape(-1, factor).sum(axis=1)
        edges = np.concatenate([edges[::factor], edges[-1:]])[: len(counts) + 1]
    nonzero = np.nonzero(counts)[0]
    lo, hi = (nonzero[0], nonzero[-1] + 1) if nonzero.size else (0, len(counts))
    # keep one empty bucket either side, as the histogram dashboard expects an edge
    lo, hi = max(lo - 1, 0), min(hi + 1, len(counts))
    return (float(values.min()), float(values.max()), int(values.size), float(values.sum()),
            float((values ** 2).sum()), edges[lo + 1:hi + 1].tolist(),
            counts[lo:hi].astype(float).tolist())


# ---------------------------------------------------------------------------
# the graph

class _ScopeTracer(Observer):
    """Runs a model once, remembering which module scope made each backward node."""

    def __init__(self, model):
        self.names = {id(m): name for name, m in model.named_modules()}
        self.path = []
        self.scopes = {}  # id(node) -> (node, scope)

    def module(self, module, args, kwargs):
        attr = self.names.get(id(module), "")
        cls = type(module).__name__
        self.path.append(cls if not self.path else f"{cls}[{attr.rsplit('.', 1)[-1]}]")
        try:
            return run_module(self.prev, module, args, kwargs)
        finally:
            self.path.pop()

    def op(self, cls, args, params):
        result = run_op(self.prev, cls, args, params)
        outs = result if isinstance(result, tuple) else (result,)
        for o in outs:
            fn = getattr(o, "_grad_fn", None)
            if fn is not None and id(fn) not in self.scopes:
                self.scopes[id(fn)] = (fn, "/".join(self.path))
        return result


def _param_scope(model, name: str) -> str:
    """'fc1.weight' -> 'Net/Linear[fc1]/weight': the scope names `_ScopeTracer` uses."""
    parts = name.split(".")
    path, module = [type(model).__name__], model
    for attr in parts[:-1]:
        module = getattr(module, attr)
        path.append(f"{type(module).__name__}[{attr}]")
    return "/".join(path + [parts[-1]])


def _graph_def(model, outputs, tracer, pb):
    """The GraphDef of the autograd graph behind `outputs`."""
    params = {id(p): name for name, p in model.named_parameters()}
    top = type(model).__name__
    names, nodes, counts = {}, [], {}

    def shape_attr(shape):
        dims = [pb["shape"].TensorShapeProto.Dim(size=int(d)) for d in shape]
        shp = pb["shape"].TensorShapeProto(dim=dims)
        return pb["attr"].AttrValue(list=pb["attr"].AttrValue.ListValue(shape=[shp]))

    def name_of(node) -> str:
        key = id(node)
        if key in names:
            return names[key]
        if isinstance(node, AccumulateGrad):
            pname = params.get(id(node.variable))
            base = _param_scope(model, pname) if pname else "input"
        else:
            scope = tracer.scopes.get(key, (None, top))[1] or top
            base = f"{scope}/{node.name()}"
        n = counts.get(base, 0)
        counts[base] = n + 1
        names[key] = base if n == 0 else f"{base}_{n}"
        return names[key]

    roots = [o.grad_fn for o in outputs if isinstance(o, Tensor) and o.grad_fn is not None]
    seen, stack = set(), list(roots)
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        inputs = [name_of(child) for child, _ in node._edges if child is not None]
        attr = {"_output_shapes": shape_attr(node._out_meta[0][0])} if node._out_meta else {}
        if isinstance(node, AccumulateGrad):
            op = "Parameter" if id(node.variable) in params else "IO Node"
        else:
            op = node.name()
        nodes.append(pb["node"].NodeDef(name=name_of(node), op=op, input=inputs,
                                        device="/device:CPU:0", attr=attr))
        stack.extend(child for child, _ in node._edges if child is not None)
    for i, o in enumerate(outputs):
        if isinstance(o, Tensor) and o.grad_fn is not None:
            nodes.append(pb["node"].NodeDef(name=f"output.{i}", op="IO Node",
                                            input=[name_of(o.grad_fn)],
                                            attr={"_output_shapes": shape_attr(o.shape)}))
    return pb["graph"].GraphDef(node=nodes, versions=pb["versions"].VersionDef(producer=22))


# ---------------------------------------------------------------------------
# the writer

class SummaryWriter:
    """Write scalars, histograms, images, figures, text, graphs and hparams for TensorBoard.

    >>> with SummaryWriter("runs/exp1") as w:
    ...     for step in range(100):
    ...         w.add_scalar("loss", loss_value, step)

    `log_dir` defaults to ``runs/<date>_<host><comment>``.  Events are buffered
    (`max_queue`, `flush_secs`) and written by TensorBoard's own event-file writer.
    """

    def __init__(self, log_dir: str | None = None, comment: str = "",
                 purge_step: int | None = None, max_queue: int = 10, flush_secs: int = 120,
                 filename_suffix: str = ""):
        self._pb = _tb()
        if not log_dir:
            stamp = datetime.now().strftime("%b%d_%H-%M-%S")
            log_dir = os.path.join("runs", f"{stamp}_{socket.gethostname()}{comment}")
        self.log_dir = str(log_dir)
        self.purge_step = purge_step
        self.max_queue = max_queue
        self.flush_secs = flush_secs
        self.filename_suffix = filename_suffix
        self._writers = {}
        self._closed = False
        self._file_writer = self._writer(self.log_dir)
        if purge_step is not None:
            start = self._pb["event"].SessionLog.START
            self._file_writer.add_event(self._pb["event"].Event(
                step=purge_step, wall_time=time.time(),
                session_log=self._pb["event"].SessionLog(status=start)))

    def _writer(self, log_dir: str):
        writer = self._writers.get(log_dir)
        if writer is None:
            writer = self._pb["EventFileWriter"](log_dir, self.max_queue, self.flush_secs,
                                                 self.filename_suffix)
            self._writers[log_dir] = writer
        return writer

    def get_logdir(self) -> str:
        """The directory the event files go to."""
        return self.log_dir

    def _add(self, summary, global_step, walltime, writer=None) -> None:
        if self._closed:
            raise RuntimeError("SummaryWriter: writing after close()")
        event = self._pb["event"].Event(summary=summary,
                                        wall_time=time.time() if walltime is None else walltime)
        if global_step is not None:
            event.step = int(_scalar(global_step))
        (writer or self._file_writer).add_event(event)

    def _summary(self, **value):
        pb = self._pb["summary"]
        return pb.Summary(value=[pb.Summary.Value(**value)])

    # scalars ----------------------------------------------------------------

    def add_scalar(self, tag: str, scalar_value, global_step=None, walltime=None,
                   new_style: bool = False, double_precision: bool = False) -> None:
        """Log one number (a Python number, or a 1-element tensor/array) under `tag`."""
        value = _scalar(scalar_value)
        if not new_style:
            self._add(self._summary(tag=tag, simple_value=value), global_step, walltime)
            return
        from tensorboard.plugins.scalar import metadata

        t = self._pb["tensor"].TensorProto(
            dtype=self._pb["types"].DT_DOUBLE if double_precision else self._pb["types"].DT_FLOAT,
            tensor_shape=self._pb["shape"].TensorShapeProto())
        (t.double_val if double_precision else t.float_val).append(value)
        meta = metadata.create_summary_metadata(display_name="", description="")
        self._add(self._summary(tag=tag, tensor=t, metadata=meta), global_step, walltime)

    def add_scalars(self, main_tag: str, tag_scalar_dict: dict, global_step=None,
                    walltime=None) -> None:
        """Log several numbers on one chart: each goes to the run ``<log_dir>/<main_tag>_<key>``."""
        walltime = time.time() if walltime is None else walltime
        for key, value in tag_scalar_dict.items():
            run = os.path.join(self.log_dir, f"{main_tag.replace('/', '_')}_{key}")
            self._add(self._summary(tag=main_tag, simple_value=_scalar(value)), global_step,
                      walltime, writer=self._writer(run))

    # histograms ---------------------------------------------------------------

    def add_histogram(self, tag: str, values, global_step=None, bins="tensorflow",
                      walltime=None, max_bins=None) -> None:
        """Log the distribution of `values`; `bins` as for ``numpy.histogram``, or
        "tensorflow" (TensorFlow's exponential buckets)."""
        lo, hi, num, total, squares, limits, counts = _histogram(_numpy(values), bins, max_bins)
        histo = self._pb["summary"].HistogramProto(min=lo, max=hi, num=num, sum=total,
                                                   sum_squares=squares, bucket_limit=limits,
                                                   bucket=counts)
        self._add(self._summary(tag=tag, histo=histo), global_step, walltime)

    # images -------------------------------------------------------------------

    def _image(self, tag, hwc, global_step, walltime) -> None:
        hwc = _to_uint8(hwc)
        image = self._pb["summary"].Summary.Image(height=hwc.shape[0], width=hwc.shape[1],
                                                  colorspace=hwc.shape[2],
                                                  encoded_image_string=_png(hwc))
        self._add(self._summary(tag=tag, image=image), global_step, walltime)

    def add_image(self, tag: str, img_tensor, global_step=None, walltime=None,
                  dataformats: str = "CHW") -> None:
        """Log an image: floats in [0, 1] or uint8, laid out as `dataformats` (CHW, HWC, HW)."""
        self._image(tag, _to_hwc(_numpy(img_tensor), dataformats), global_step, walltime)

    def add_images(self, tag: str, img_tensor, global_step=None, walltime=None,
                   dataformats: str = "NCHW") -> None:
        """Log a batch of images tiled into one grid."""
        self._image(tag, _grid(_numpy(img_tensor), dataformats), global_step, walltime)

    def add_figure(self, tag: str, figure, global_step=None, close: bool = True,
                   walltime=None) -> None:
        """Log a matplotlib figure (or a list of figures, tiled) as an image."""
        figures = figure if isinstance(figure, (list, tuple)) else [figure]
        images = [_figure_to_hwc(f) for f in figures]
        if close:
            import matplotlib.pyplot as plt

            for f in figures:
                plt.close(f)
        if len(images) == 1:
            self._image(tag, images[0], global_step, walltime)
        else:
            self._image(tag, _grid(np.stack(images), "NHWC"), global_step, walltime)

    # text ---------------------------------------------------------------------

    def add_text(self, tag: str, text_string: str, global_step=None, walltime=None) -> None:
        """Log a string (Markdown is rendered by the text dashboard)."""
        from tensorboard.plugins.text import metadata

        t = self._pb["tensor"].TensorProto(
            dtype=self._pb["types"].DT_STRING, string_val=[str(text_string).encode("utf-8")],
            tensor_shape=self._pb["shape"].TensorShapeProto(
                dim=[self._pb["shape"].TensorShapeProto.Dim(size=1)]))
        meta = metadata.create_summary_metadata(display_name="", description="")
        self._add(self._summary(tag=f"{tag}/text_summary", tensor=t, metadata=meta),
                  global_step, walltime)

    # graph --------------------------------------------------------------------

    def add_graph(self, model, input_to_model=None, verbose: bool = False,
                  use_strict_trace: bool = True) -> None:
        """Run ``model(input_to_model)`` once and log its autograd graph."""
        inputs = input_to_model
        if inputs is None:
            inputs = ()
        elif not isinstance(inputs, (list, tuple)):
            inputs = (inputs,)
        tracer = _ScopeTracer(model)
        tracer.install()
        try:
            with enable_grad():
                out = model(*inputs)
        finally:
            tracer.uninstall()
        outputs = list(out) if isinstance(out, (list, tuple)) else [out]
        graph = _graph_def(model, outputs, tracer, self._pb)
        if verbose:
            print(graph)
        event = self._pb["event"].Event(graph_def=graph.SerializeToString(),
                                        wall_time=time.time())
        self._file_writer.add_event(event)

    # hparams ------------------------------------------------------------------

    def add_hparams(self, hparam_dict: dict, metric_dict: dict,
                    hparam_domain_discrete: dict | None = None, run_name: str | None = None,
                    global_step=None) -> None:
        """Log one trial's hyperparameters and its final metrics (HParams dashboard).

        They go to a sub-run ``<log_dir>/<run_name>`` (a time stamp by default)."""
        if not isinstance(hparam_dict, dict) or not isinstance(metric_dict, dict):
            raise TypeError("add_hparams: hparam_dict and metric_dict must be dicts")
        from tensorboard.plugins.hparams import summary_v2 as hp

        values = {}
        for k, v in hparam_dict.items():
            if isinstance(v, Tensor):
                v = v.item()
            values[k] = v if isinstance(v, (bool, int, float, str)) else str(v)
        domains = hparam_domain_discrete or {}
        params = [hp.HParam(k, hp.Discrete(domains[k]) if k in domains else None)
                  for k in values]
        metrics = [hp.Metric(k) for k in metric_dict]
        writer = self._writer(os.path.join(self.log_dir, run_name or repr(time.time())))
        self._add(hp.hparams_config_pb(params, metrics), None, None, writer)
        self._add(hp.hparams_pb(values), None, None, writer)
        for k, v in metric_dict.items():
            self._add(self._summary(tag=k, simple_value=_scalar(v)), global_step, None, writer)

    # embeddings ---------------------------------------------------------------

    def add_embedding(self, mat, metadata=None, label_img=None, global_step=None,
                      tag: str = "default", metadata_header=None) -> None:
        """Write vectors (N, D) and optional labels for the Projector dashboard."""
        array = _numpy(mat)
        if array.ndim != 2:
            raise ValueError(f"add_embedding: expected a 2-D matrix, got shape {array.shape}")
        sub = f"{global_step or 0:05d}"
        folder = os.path.join(self.log_dir, sub, tag)
        os.makedirs(folder, exist_ok=True)
        np.savetxt(os.path.join(folder, "tensors.tsv"), array, delimiter="\t", fmt="%.8g")
        config = ["embeddings {", f'  tensor_name: "{tag}:{sub}"',
                  f'  tensor_path: "{sub}/{tag}/tensors.tsv"']
        if metadata is not None:
            rows = [metadata_header] if metadata_header else []
            rows += ["\t".join(map(str, m)) if isinstance(m, (list, tuple)) else str(m)
                     for m in metadata]
            with open(os.path.join(folder, "metadata.tsv"), "w", encoding="utf-8") as f:
                f.write("\n".join(rows) + "\n")
            config.append(f'  metadata_path: "{sub}/{tag}/metadata.tsv"')
        config.append("}")
        with open(os.path.join(self.log_dir, "projector_config.pbtxt"), "a",
                  encoding="utf-8") as f:
            f.write("\n".join(config) + "\n")

    def add_custom_scalars(self, layout: dict) -> None:
        """Not supported by ember (TensorBoard's custom-scalars layout)."""
        raise NotImplementedError("SummaryWriter.add_custom_scalars is not supported by ember")

    # lifecycle ----------------------------------------------------------------

    def flush(self) -> None:
        """Write pending events to disk."""
        for writer in self._writers.values():
            writer.flush()

    def close(self) -> None:
        """Flush and close every event file."""
        if self._closed:
            return
        for writer in self._writers.values():
            writer.flush()
            writer.close()
        self._closed = True

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __repr__(self) -> str:
        return f"SummaryWriter(log_dir={self.log_dir!r})"
