"""The leaderboard in a real headless Chromium (Debian's ``chromium`` + ``chromium-driver``, via selenium).

Skips only when chromium or chromedriver is not installed (CI installs them).
"""

from __future__ import annotations

import shutil

import pytest
from lb_helpers import INJECTED_NAME, make_submission_dir

from ascend_kernel_gym.leaderboard.site import build_site

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
)

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        CHROMIUM is None or CHROMEDRIVER is None,
        reason="needs Debian's chromium and chromium-driver (apt-get install -y chromium chromium-driver)",
    ),
]


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root = tmp_path_factory.mktemp("lb-browser")
    result = build_site(make_submission_dir(root), root / "site")
    assert result["submissions"] == 3
    return result


@pytest.fixture(scope="module")
def driver(tmp_path_factory):
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    options.binary_location = CHROMIUM
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    browser = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    browser.set_page_load_timeout(60)
    yield browser
    browser.quit()


def console_errors(browser):
    return [entry for entry in browser.get_log("browser") if entry.get("level") == "SEVERE"]


def agent_names(browser):
    from selenium.webdriver.common.by import By

    rows = browser.find_elements(By.CSS_SELECTOR, "#leaderboard tbody tr")
    return [row.find_elements(By.TAG_NAME, "td")[0].text for row in rows if row.is_displayed()]


def header_button(browser, label):
    from selenium.webdriver.common.by import By

    for th in browser.find_elements(By.CSS_SELECTOR, "#leaderboard thead th"):
        if th.text.strip().rstrip("▲▼ ").strip() == label:
            return th, th.find_element(By.TAG_NAME, "button")
    raise AssertionError(f"no column {label!r}")


def test_index_loads_sorts_and_filters(site, driver):
    from pathlib import Path

    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    driver.get(Path(site["index"]).as_uri())
    assert "leaderboard" in driver.title
    assert console_errors(driver) == []

    # one row per submission; initial order: correct rate, best first
    assert agent_names(driver) == ["gamma", "alpha", INJECTED_NAME]
    # the hostile agent name is shown as text and its markup never ran
    assert driver.execute_script("return window.__pwned === undefined")

    th, button = header_button(driver, "agent")
    button.click()
    assert th.get_attribute("aria-sort") == "ascending"
    assert agent_names(driver) == ["alpha", INJECTED_NAME, "gamma"]

    th, button = header_button(driver, "correct")
    button.click()  # numbers sort best first on the first click
    assert th.get_attribute("aria-sort") == "descending"
    assert agent_names(driver) == ["gamma", "alpha", INJECTED_NAME]
    button.click()
    assert th.get_attribute("aria-sort") == "ascending"
    assert agent_names(driver) == [INJECTED_NAME, "alpha", "gamma"]

    th, button = header_button(driver, "fast_1")  # n/a (interpreter) always sorts last
    button.click()
    assert agent_names(driver) == ["gamma", "alpha", INJECTED_NAME]
    button.click()
    assert agent_names(driver) == ["alpha", "gamma", INJECTED_NAME]

    backend = Select(driver.find_element(By.ID, "filter-backend"))
    backend.select_by_value("interpreter")
    assert agent_names(driver) == [INJECTED_NAME]
    assert driver.find_element(By.ID, "shown-count").text == "1"
    backend.select_by_value("cuda")
    assert sorted(agent_names(driver)) == ["alpha", "gamma"]
    backend.select_by_value("")
    assert len(agent_names(driver)) == 3
    suite = Select(driver.find_element(By.ID, "filter-suite"))
    assert len(suite.options) == 2  # "all" + the one suite
    assert console_errors(driver) == []


def test_submission_page_shows_per_task_results(site, driver):
    from pathlib import Path

    from selenium.webdriver.common.by import By

    driver.get(Path(site["index"]).as_uri())
    driver.find_element(By.LINK_TEXT, "alpha").click()
    assert "alpha" in driver.find_element(By.TAG_NAME, "h1").text
    rows = driver.find_elements(By.CSS_SELECTOR, "#tasks tbody tr")
    assert [r.find_elements(By.TAG_NAME, "td")[0].text.split(" ")[0] for r in rows] == [
        "core/L1/relu",
        "core/L1/sigmoid",
        "core/L1/gelu",
    ]
    assert rows[0].find_elements(By.TAG_NAME, "td")[-1].text.startswith("agree")
    assert console_errors(driver) == []

    # the hostile submission's page: code with a closing tag and a script is shown as text
    driver.get(Path(site["index"]).as_uri())
    links = driver.find_elements(By.CSS_SELECTOR, "#leaderboard tbody td a")
    hostile = next(link for link in links if link.text == INJECTED_NAME)
    hostile.click()
    assert driver.execute_script("return window.__pwned === undefined")
    codes = driver.find_elements(By.CSS_SELECTOR, "details pre code")
    assert codes and "<script>" in codes[0].get_attribute("textContent")
    assert console_errors(driver) == []


@pytest.fixture(scope="module")
def demo_like_site(tmp_path_factory):
    """Submissions with the long cells of `make demo`'s: scripted agents, the interpreter's device name."""
    import json

    from lb_helpers import episode, result, write_fake_run

    from ascend_kernel_gym.leaderboard.submission import build_submission, write_submission

    root = tmp_path_factory.mktemp("lb-layout")
    ids = ["core/L1/relu", "core/L1/sigmoid", "core/L1/gelu"]
    out = root / "submissions"
    agents = {
        "reference": "bundled reference solutions",
        "sloppy": "cheats and sloppy answers (a demo of the evaluator's checks)",
    }
    for index, (name, description) in enumerate(agents.items()):
        records = [episode(t, 0, result(correct=index == 0, backend="interpreter")) for t in ids]
        run = write_fake_run(
            root / name,
            records,
            task_ids=ids,
            backend="interpreter",
            device_name="CPU (x86_64, Triton interpreter)",
            agent={"name": name, "class": "ascend_kernel_gym.agents.sloppy.SloppyPolicy", "kind": "scripted",
                   "description": description},
        )  # fmt: skip
        data = build_submission(run)
        path = write_submission(data, out / f"{name}.json")
        report = {"digest": data["digest"]["value"], "accepted": True, "local_backend": "interpreter", "tasks": []}
        path.with_name(f"{name}.verify.json").write_text(json.dumps(report))
    return build_site(out, root / "site")


def test_index_fits_1400_pixels_with_every_column_visible(demo_like_site, driver, tmp_path):
    from pathlib import Path

    from selenium.webdriver.common.by import By

    driver.set_window_size(1400, 900)
    driver.get(Path(demo_like_site["index"]).as_uri())
    viewport = driver.execute_script("return document.documentElement.clientWidth")
    assert viewport <= 1400
    table = driver.find_element(By.ID, "leaderboard")
    right = driver.execute_script("return arguments[0].getBoundingClientRect().right", table)
    assert right <= viewport, f"the table ends at {right} px in a {viewport} px window"
    headers = driver.find_elements(By.CSS_SELECTOR, "#leaderboard thead th")
    assert headers[-1].text.strip().rstrip("▲▼ ").strip() == "date"
    assert driver.execute_script("return arguments[0].getBoundingClientRect().right", headers[-1]) <= viewport
    rows = driver.find_elements(By.CSS_SELECTOR, "#leaderboard tbody tr")
    models = [row.find_elements(By.TAG_NAME, "td")[1].text for row in rows]
    assert all(models) and any("bundled reference solutions" in m for m in models)
    shot = tmp_path / "leaderboard-1400.png"
    assert driver.save_screenshot(str(shot)) and shot.stat().st_size > 0
    assert console_errors(driver) == []
