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
