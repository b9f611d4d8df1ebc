"""Renders one array of a hardware sweep's XDMF sidecar with ParaView (run with pvpython).

    pvpython scripts/paraview_hw_sweep.py outputs/sweep_bw_capacity_1d_gpt3_1T.xmf \\
        --array speedup_8192_gpus --out speedup_8192.png
    xvfb-run -a pvpython scripts/paraview_hw_sweep.py ...     # headless (no display)

Opens the sidecar with the XDMF 3 reader (Xdmf3ReaderS), colours the 2-D grid (x: axis 1, y:
axis 0 of the sweep) by the array (best_throughput_<n>_gpus, speedup_<n>_gpus or days_<n>_gpus;
grey: nothing fits), scales y so that the plot is square while the axes keep their own values, and
titles the axes with the swept parameters and their units (the sidecar's Information). A sidecar
that does not belong to the .h5 beside it (its recorded SHA-256 differs) is refused.
"""
import argparse
import re

from paraview.simple import (ColorBy, GetActiveViewOrCreate, GetColorTransferFunction, GetScalarBar, Render,
                             SaveScreenshot, Show, Xdmf3ReaderS)


def axis_titles(xmf):
    """(x title, y title): the sidecar's x_axis and y_axis Information (parameter and units).
    Read with a regular expression: in pvpython, Python's XML parser (pyexpat) and h5py clash with
    the expat and HDF5 libraries VTK loads."""
    with open(xmf) as f:
        info = dict(re.findall(r'<Information Name="([^"]*)" Value="([^"]*)"', f.read()))
    return info.get('x_axis', ''), info.get('y_axis', '')


def check_pair(xmf):
    """Refuses a sidecar that does not belong to the .h5 beside it (python/perfsweep/sidecar.py,
    loaded by its path: the package's __init__ imports h5py, which clashes with VTK's HDF5)."""
    import importlib.util
    import os
    here = os.path.dirname(os.path.abspath(__file__))
    spec = importlib.util.spec_from_file_location(
        'perfsweep_sidecar', os.path.join(here, os.pardir, 'python', 'perfsweep', 'sidecar.py'))
    sidecar = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(sidecar)
    try:
        sidecar.check_sidecar(xmf)
    except ValueError as e:
        raise SystemExit(str(e))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('xmf')
    ap.add_argument('--array', default=None, help='point array (default: the last speedup_<n>_gpus)')
    ap.add_argument('--out', default='hw_sweep.png')
    ap.add_argument('--size', default='1200x900', help='image size WxH in pixels')
    args = ap.parse_args()
    check_pair(args.xmf)

    reader = Xdmf3ReaderS(FileName=[args.xmf])
    reader.UpdatePipeline()
    names = list(reader.PointData.keys())
    array = args.array or sorted((n for n in names if n.startswith('speedup_')),
                                 key=lambda n: int(n.split('_')[1]))[-1]
    if array not in names:
        raise SystemExit(f'{args.xmf}: no point array {array!r}; have {", ".join(sorted(names))}')

    view = GetActiveViewOrCreate('RenderView')
    display = Show(reader, view)
    ColorBy(display, ('POINTS', array))
    lut = GetColorTransferFunction(array)
    lut.ApplyPreset('Cool to Warm', True)
    lo, hi = reader.PointData[array].GetRange()
    if array.startswith('speedup_'):  # white at 1: blue faster, red slower than the base
        half = max(abs(hi - 1), abs(1 - lo), 1e-3)
        lo, hi = 1 - half, 1 + half
        lut.InvertTransferFunction()
    lut.RescaleTransferFunction(lo, hi)
    lut.NanColor = [0.6, 0.6, 0.6]
    display.SetScalarBarVisibility(view, True)
    bar = GetScalarBar(lut, view)
    bar.Title = array
    bar.ComponentTitle = ''
    bar.RangeLabelFormat = '%-#.3g'
    bar.TitleFontSize = 14
    bar.LabelFontSize = 12
    bar.WindowLocation = 'Any Location'  # beside the plot, not over it
    bar.Orientation = 'Vertical'
    bar.Position = [0.85, 0.15]
    bar.ScalarBarLength = 0.7

    # x and y differ by orders of magnitude (GB/s against GB): a square plot, labelled in data units.
    x0, x1, y0, y1, _, _ = reader.GetDataInformation().GetBounds()
    scale = [1.0, (x1 - x0) / (y1 - y0) if y1 > y0 else 1.0, 1.0]
    display.Scale = scale
    x_title, y_title = axis_titles(args.xmf)
    view.AxesGrid.Visibility = 1
    view.AxesGrid.DataScale = scale
    view.AxesGrid.XTitle = x_title
    view.AxesGrid.YTitle = y_title
    view.AxesGrid.XTitleFontSize = view.AxesGrid.YTitleFontSize = 14
    view.AxesGrid.XLabelFontSize = view.AxesGrid.YLabelFontSize = 12
    view.InteractionMode = '2D'
    view.ResetCamera()
    Render(view)
    w, h = (int(v) for v in args.size.split('x'))
    SaveScreenshot(args.out, view, ImageResolution=[w, h])
    print(f'wrote {args.out}: {array} in [{lo:.4g}, {hi:.4g}], x {x_title}, y {y_title}')


if __name__ == '__main__':
    main()
