#!/usr/bin/python3
"""`report`: the HTML page of a sweep's HDF5 file, read by a program and rendered in a browser.

    test_report.py files BIN_DIR OUT
      two small runs (a plain sweep under the megatron runtime with a token budget and price, a
      hardware sweep) and their reports, for the other modes.
    test_report.py page BIN_DIR OUT
      each report: the same bytes when made again, nothing fetched (no URL, no external script,
      style, font or image), every section and chart there, the file's numbers in the best table,
      HTML-escaped text from the file.
    test_report.py bad BIN_DIR OUT
      bad input: a missing file, one that is not HDF5, an HDF5 file that is not a sweep's, a sweep
      file with a dataset removed or of the wrong length, a second file of another model; each
      exits 2 naming the file and the field, and leaves the output as it was (absent, or an
      earlier file untouched).
    test_report.py browser OUT
      Debian's headless Chromium renders each report: the screenshot (1280x2000) is not blank, and
      through chromedriver's WebDriver API the page's console has no error, its charts are drawn,
      hovering a heatmap cell shows its configuration and the GPU-count selector switches maps.
      Skipped (77) without chromium or chromedriver.
    test_report.py console HTML
      only the console check, of any page (exit 1 on a console error).
"""
import glob
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

import numpy as np

from test_user_side import SKIP, Failure, check, run  # noqa: E402 (the same helpers, the same directory)

CHROMIUM = shutil.which('chromium') or '/usr/bin/chromium'
CHROMEDRIVER = shutil.which('chromedriver') or '/usr/bin/chromedriver'
HEADLESS = ['--headless', '--no-sandbox', '--disable-gpu', '--hide-scrollbars', '--window-size=1280,2000']


REPORTS = ('plain', 'hw')


def files(bin_dir, out):
    os.makedirs(out, exist_ok=True)
    run([f'{bin_dir}/sweep', '--model', 'llama3_8b', '--system', 'H100', '--n-gpus', '8,16,32,64',
         '--recompute', 'none,full', '--tokens', '1e12', '--gpu-hour-cost', '2', '-o', f'{out}/plain.h5', '-q'])
    run([f'{bin_dir}/sweep', '--sweep', 'flops_capacity', '--model', 'gpt3_1T', '--strat', '1d',
         '--n-gpus', '4096:8192', '-o', f'{out}/hw.h5', '-q'], expect=0)
    for name in REPORTS:
        run([f'{bin_dir}/report', f'{out}/{name}.h5', '-o', f'{out}/{name}.html', '-q'])
        check(os.path.getsize(f'{out}/{name}.html') > 10000, f'{name}.html written')


def page(bin_dir, out):
    import h5py
    for name in REPORTS:
        html = open(f'{out}/{name}.html', encoding='utf-8').read()
        again = f'{out}/{name}.again.html'
        run([f'{bin_dir}/report', f'{out}/{name}.h5', '-o', again, '-q'])
        check(open(again, encoding='utf-8').read() == html, f'{name}: the same bytes when made again')
        # Nothing fetched: the SVG namespace is the only URL, and no element loads anything.
        urls = set(re.findall(r'(?:https?|ftp)://[^\s"\'<>)]+', html)) - {'http://www.w3.org/2000/svg'}
        check(not urls, f'{name}: no URL but the SVG namespace ({sorted(urls)[:3]})')
        check(not re.search(r'<(?:link|img|iframe|object|embed)\b|\ssrc=|@import|url\(', html),
              f'{name}: no external script, style, font or image')
        for section in ('best', 'scaling', 'breakdown', 'memory', 'inputs'):
            check(f'id="{section}"' in html, f'{name}: section {section}')
        check(html.count('<svg class="chart"') >= 4, f'{name}: charts drawn ({html.count("<svg")})')
        with h5py.File(f'{out}/{name}.h5') as f:
            group = 'base' if name == 'hw' else 'H100-NVS8'
            top = f[group]['top']
            fastest = [i for i in range(len(top['rank'])) if top['rank'][i] == 0]
            for i in fastest:
                t = float(top['t'][i])
                check(f'>{t:.4g}</td>' in html, f'{name}: best time per step {t:.4g} s at {top["n_gpus"][i]} GPUs')
            command = f.attrs['command_line']
            command = command.decode() if isinstance(command, bytes) else command
            check(command.replace('&', '&amp;').replace('<', '&lt;') in html, f'{name}: the command line shown')
        if name == 'hw':
            check(html.count('class="hw-map"') == 2, 'hw: one heatmap per GPU count')
            check('speed-up over B200' in html, 'hw: speed-up over the base named')
            check(html.count('<rect') > 2 * 220, 'hw: a cell per point and GPU count')
        else:
            check('<th>MFU</th>' in html and '<th>cost</th>' in html, 'plain: MFU and cost columns')
            check('recompute' in html and 'full' in html, 'plain: the searched execution options')
    # Text from the file is escaped: a system name with markup in it.
    escaped = f'{out}/escaped.h5'
    shutil.copy(f'{out}/plain.h5', escaped)
    with h5py.File(escaped, 'r+') as f:
        del f['H100-NVS8'].attrs['name']
        f['H100-NVS8'].attrs['name'] = np.bytes_('<b>H100</b> & "x"')
    run([f'{bin_dir}/report', escaped, '-o', f'{out}/escaped.html', '-q'])
    html = open(f'{out}/escaped.html', encoding='utf-8').read()
    check('<b>H100' not in html and '&lt;b&gt;H100&lt;/b&gt; &amp; &quot;x&quot;' in html, 'markup from the file escaped')


def bad(bin_dir, out):
    import h5py
    os.makedirs(out, exist_ok=True)
    good = f'{out}/plain.h5'
    not_h5 = f'{out}/not.h5'
    open(not_h5, 'w').write('not HDF5\n')
    no_schema = f'{out}/no_schema.h5'
    with h5py.File(no_schema, 'w') as f:
        f.create_group('x')
    no_t = f'{out}/no_t.h5'
    shutil.copy(good, no_t)
    with h5py.File(no_t, 'r+') as f:
        del f['H100-NVS8/top/t']
    short = f'{out}/short.h5'
    shutil.copy(good, short)
    with h5py.File(short, 'r+') as f:
        del f['H100-NVS8/top/mem']
        f['H100-NVS8/top'].create_dataset('mem', data=[1.0, 2.0])
    other_model = f'{out}/other_model.h5'
    shutil.copy(good, other_model)
    with h5py.File(other_model, 'r+') as f:
        f.attrs['model'] = np.bytes_('gpt3')
    # Values a sweep cannot have written (it checks each as it writes): refused, never rendered.
    def altered(name, edit):
        path = f'{out}/{name}.h5'
        shutil.copy(good, path)
        with h5py.File(path, 'r+') as f:
            edit(f)
        return path

    def set_value(dataset, value):
        def edit(f):
            data = f[dataset][()]
            data[0] = value
            f[dataset][...] = data
        return edit

    negative_t = altered('negative_t', set_value('H100-NVS8/top/t', -1.0))
    nan_throughput = altered('nan_throughput', set_value('H100-NVS8/top/throughput', float('nan')))
    code_99 = altered('code_99', set_value('H100-NVS8/top/recompute', 99))
    zero_dp = altered('zero_dp', set_value('H100-NVS8/top/dp', 0))

    def bad_name(f):
        del f['H100-NVS8'].attrs['name']
        f['H100-NVS8'].attrs['name'] = np.bytes_(b'H100\xff')
    not_utf8 = altered('not_utf8', bad_name)
    cases = [
        ([negative_t], r'negative_t\.h5: /H100-NVS8/top/t\[0\]: = -1: not a finite, non-negative number \(a sweep '
                       r'writes none: the file was altered'),
        ([nan_throughput], r'nan_throughput\.h5: /H100-NVS8/top/throughput\[0\]: = nan: not a finite'),
        ([code_99], r'code_99\.h5: /H100-NVS8/top/recompute\[0\]: = 99: not a value of the option'),
        ([zero_dp], r'zero_dp\.h5: /H100-NVS8/top/dp\[0\]: = 0: not a degree or GPU count'),
        ([not_utf8], r'not_utf8\.h5: /H100-NVS8/name: not UTF-8 text'),
        ([f'{out}/absent.h5'], r'absent\.h5: no such file'),
        ([not_h5], r'not\.h5: not an HDF5 file'),
        ([no_schema], r'no_schema\.h5: /schema: attribute missing: not a perfsweep sweep file'),
        ([no_t], r'no_t\.h5: /H100-NVS8/top/t: dataset missing'),
        ([short], r'short\.h5: /H100-NVS8/top/mem: 2 values where n_gpus has \d+'),
        ([good, other_model], r"other_model\.h5: model 'gpt3' differs from .*plain\.h5's 'llama3_8b'"),
    ]
    for inputs, message in cases:
        output = f'{out}/bad.html'
        for earlier in (None, 'earlier page\n'):
            if earlier is None:
                if os.path.exists(output):
                    os.remove(output)
            else:
                open(output, 'w').write(earlier)
            p = run([f'{bin_dir}/report', *inputs, '-o', output], expect=2)
            check(re.search('report: error: .*' + message, p.stderr), f'{os.path.basename(inputs[-1])}: {message}')
            if earlier is None:
                check(not os.path.exists(output), 'no output written')
            else:
                check(open(output).read() == earlier, 'the earlier output left as it was')
            check(not glob.glob(glob.escape(output) + '.partial*'), 'no temporary left')


def output_is_input(bin_dir, out):
    """`report run.h5 -o run.h5` would replace the sweep's results with the page: refused, the file
    left as it was, under any name for it."""
    good = f'{out}/plain.h5'
    before = open(good, 'rb').read()
    for output in (good, f'{out}/../{os.path.basename(out)}/plain.h5'):
        p = run([f'{bin_dir}/report', good, '-o', output], expect=2)
        check(re.search(r'report: error: .*plain\.h5 is the input .*plain\.h5; an output never replaces an input',
                        p.stderr), f'-o {output}: refused')
        check(open(good, 'rb').read() == before, 'the input left as it was')


def free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


class WebDriver:
    """The few WebDriver calls the test needs, over HTTP with urllib (chromedriver)."""

    def __init__(self):
        self.port = free_port()
        self.process = subprocess.Popen([CHROMEDRIVER, f'--port={self.port}'], stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL)
        for _ in range(100):
            try:
                self.call('GET', '/status')
                break
            except OSError:
                time.sleep(0.1)
        caps = {'capabilities': {'alwaysMatch': {
            'browserName': 'chrome', 'goog:loggingPrefs': {'browser': 'ALL'},
            'goog:chromeOptions': {'binary': CHROMIUM, 'args': HEADLESS}}}}
        self.session = self.call('POST', '/session', caps)['sessionId']

    def call(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(f'http://127.0.0.1:{self.port}{path}', data=data, method=method,
                                     headers={'Content-Type': 'application/json'})
        with urllib.request.urlopen(req, timeout=60) as r:
            return json.loads(r.read())['value']

    def session_call(self, method, path, body=None):
        return self.call(method, f'/session/{self.session}{path}', body)

    def script(self, js):
        return self.session_call('POST', '/execute/sync', {'script': js, 'args': []})

    def close(self):
        try:
            self.call('DELETE', f'/session/{self.session}')
        finally:
            self.process.terminate()
            self.process.wait(timeout=30)


def console_errors(driver, html):
    driver.session_call('POST', '/url', {'url': 'file://' + os.path.abspath(html)})
    log = driver.session_call('POST', '/se/log', {'type': 'browser'})
    return [e for e in log if e.get('level') == 'SEVERE']


def have_browser():
    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if not os.access(p, os.X_OK)]
    if missing:
        print(f'skipped: {", ".join(missing)} not installed (scripts/setup.sh installs chromium and chromium-driver)')
        return False
    return True


def screenshot_check(html, png):
    import matplotlib.image
    if os.path.exists(png):
        os.remove(png)
    with tempfile.TemporaryDirectory() as profile:
        run([CHROMIUM, *HEADLESS, f'--user-data-dir={profile}', f'--screenshot={png}', 'file://' + os.path.abspath(html)])
    check(os.path.getsize(png) > 20000, f'{os.path.basename(png)}: {os.path.getsize(png)} bytes')
    image = matplotlib.image.imread(png)
    check(image.shape[:2] == (2000, 1280), f'{os.path.basename(png)}: 1280x2000 ({image.shape[1]}x{image.shape[0]})')
    pixels = (image[:, :, :3] * 255).astype(np.uint8).reshape(-1, 3)
    colours = len(np.unique(pixels, axis=0))
    inked = float(np.mean(np.any(pixels < 200, axis=1)))
    check(colours > 100, f'{os.path.basename(png)}: {colours} distinct colours')
    check(inked > 0.03, f'{os.path.basename(png)}: {100 * inked:.1f}% of the pixels inked')


def browser(out):
    if not have_browser():
        return SKIP
    for name in REPORTS:
        screenshot_check(f'{out}/{name}.html', f'{out}/{name}.png')
    driver = WebDriver()
    try:
        for name in REPORTS:
            errors = console_errors(driver, f'{out}/{name}.html')
            check(not errors, f'{name}: no console error {errors[:3]}')
            drawn = driver.script('return document.querySelectorAll("svg.chart").length')
            check(drawn >= 4, f'{name}: {drawn} charts in the page')
            # Hovering a mark puts its text in the chart's read-out.
            tip = driver.script('''
                var m = document.querySelector("figure:not([hidden]) [data-tip]");
                m.dispatchEvent(new MouseEvent("mouseover", {bubbles: true}));
                return [m.getAttribute("data-tip"), m.closest("figure").querySelector(".readout").textContent];''')
            check(tip[0] == tip[1] and 'strategy=' in tip[1], f'{name}: hover shows {tip[1].splitlines()[0]!r}')
            # Sorting the best table by time per step puts the fastest first.
            order = driver.script('''
                var table = document.getElementById("best-table");
                var heads = Array.prototype.slice.call(table.tHead.rows[0].cells);
                var col = heads.findIndex(function (h) { return h.textContent === "time per step (s)"; });
                heads[col].click();
                return Array.prototype.map.call(table.tBodies[0].rows,
                    function (r) { return parseFloat(r.cells[col].getAttribute("data-v")); });''')
            check(order == sorted(order), f'{name}: the best table sorts by time per step')
            if name == 'hw':
                shown = driver.script('''
                    var sel = document.querySelector("select.gpus");
                    sel.value = sel.options[0].value;
                    sel.dispatchEvent(new Event("change"));
                    return Array.prototype.filter.call(document.querySelectorAll(".hw-map"),
                        function (m) { return !m.hidden; }).map(function (m) { return m.getAttribute("data-gpus"); });''')
                check(shown == ['4096'], f'hw: the selector shows the 4096-GPU map alone ({shown})')
            errors = [e for e in driver.session_call('POST', '/se/log', {'type': 'browser'}) if e['level'] == 'SEVERE']
            check(not errors, f'{name}: no console error after the interactions {errors[:3]}')
    finally:
        driver.close()
    return 0


def console(html):
    if not have_browser():
        return SKIP
    driver = WebDriver()
    try:
        errors = console_errors(driver, html)
    finally:
        driver.close()
    check(not errors, f'{html}: no console error {errors[:3]}')
    return 0


def main():
    mode = sys.argv[1]
    try:
        if mode == 'files':
            files(sys.argv[2], sys.argv[3])
        elif mode == 'page':
            page(sys.argv[2], sys.argv[3])
        elif mode == 'bad':
            bad(sys.argv[2], sys.argv[3])
            output_is_input(sys.argv[2], sys.argv[3])
        elif mode == 'browser':
            return browser(sys.argv[2])
        elif mode == 'console':
            return console(sys.argv[2])
        else:
            raise Failure(f'unknown mode {mode}')
    except Failure as e:
        print(f'FAIL: {e}', file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
