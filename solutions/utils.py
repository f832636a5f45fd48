"""From the chapter "Attention pooling": cpu, gpu, num_gpus, mps_available, try_gpu, try_all_gpus, show_heatmaps, progress.

Generated from book/attention_pooling.ipynb by ``python -m autograder export``. Do not edit this
file: edit the ``#@save utils`` cells of the notebook, then run ``make export``.
"""

import matplotlib.pyplot as plt
import torch


def cpu():
    """The CPU device."""
    return torch.device("cpu")


def gpu(i=0):
    """The ``i``-th CUDA device, whether or not it exists (d2l's ``gpu``)."""
    return torch.device(f"cuda:{i}")


def num_gpus():
    """How many CUDA devices this machine has."""
    return torch.cuda.device_count()


def mps_available():
    """Whether Apple's Metal backend (MPS) can run tensors on this machine."""
    mps = getattr(torch.backends, "mps", None)
    return mps is not None and mps.is_available()


def try_gpu(i=0):
    """``cuda:i`` if it exists, else (for ``i == 0``) the MPS device if there is one, else the CPU.

    Like d2l's ``try_gpu``, extended to Apple silicon.
    """
    if num_gpus() >= i + 1:
        return gpu(i)
    if i == 0 and mps_available():
        return torch.device("mps")
    return cpu()


def try_all_gpus():
    """Every CUDA device, or ``[try_gpu()]`` if there is none (d2l's ``try_all_gpus``)."""
    return [gpu(i) for i in range(num_gpus())] or [try_gpu()]


def show_heatmaps(matrices, xlabel, ylabel, titles=None, figsize=(2.5, 2.5), cmap="Reds"):
    """Draw a grid of heatmaps, such as attention weights, with one shared colour bar.

    Args:
        matrices: tensor whose entry ``[i, j]`` is the matrix drawn in row ``i``,
            column ``j`` of the grid.
        xlabel: label of each heatmap's x-axis (its columns, for example "Keys").
        ylabel: label of each heatmap's y-axis (its rows, for example "Queries").
        titles: optional list of ``num_cols`` titles, one per column of the grid.
        figsize: width and height of one heatmap, in inches.
        cmap: name of a matplotlib colour map.

    Shape:
        - matrices: (num_rows, num_cols, height, width)
    """
    matrices = torch.as_tensor(matrices).detach().to("cpu", torch.float32)
    if matrices.dim() != 4:
        raise ValueError(
            "show_heatmaps expects matrices of shape (num_rows, num_cols, height, width), "
            f"got shape {tuple(matrices.shape)}; for one matrix M pass M[None, None]"
        )
    num_rows, num_cols = matrices.shape[:2]
    if titles is not None and len(titles) != num_cols:
        raise ValueError(f"expected {num_cols} titles, one per column, got {len(titles)}")
    fig, axes = plt.subplots(
        num_rows,
        num_cols,
        figsize=(figsize[0] * num_cols, figsize[1] * num_rows),
        sharex=True,
        sharey=True,
        squeeze=False,
    )
    vmin, vmax = matrices.min().item(), matrices.max().item()
    for i in range(num_rows):
        for j in range(num_cols):
            ax = axes[i, j]
            image = ax.imshow(matrices[i, j].numpy(), cmap=cmap, vmin=vmin, vmax=vmax)
            if i == num_rows - 1:
                ax.set_xlabel(xlabel)
            if j == 0:
                ax.set_ylabel(ylabel)
            if titles is not None and i == 0:
                ax.set_title(titles[j])
    fig.colorbar(image, ax=axes, shrink=0.6)


from tqdm import tqdm


class _DisplayLine:
    """A file-like object that shows what tqdm writes as one notebook output, updated in place."""

    def __init__(self):
        self.handle = None

    def write(self, text):
        from IPython.display import display

        text = text.strip("\r\n ")
        if not text:
            return
        if self.handle is None:
            self.handle = display({"text/plain": text}, raw=True, display_id=True)
        else:
            self.handle.update({"text/plain": text}, raw=True)

    def flush(self):
        pass


def progress(iterable, **kwargs):
    """``tqdm(iterable, **kwargs)``, drawn in place when running in a Jupyter kernel."""
    try:
        from IPython import get_ipython

        in_kernel = hasattr(get_ipython(), "kernel")
    except ImportError:
        in_kernel = False
    if in_kernel:
        kwargs.setdefault("file", _DisplayLine())
        kwargs.setdefault("ncols", 90)
        kwargs.setdefault("ascii", False)  # block characters, as in a terminal
    return tqdm(iterable, **kwargs)
