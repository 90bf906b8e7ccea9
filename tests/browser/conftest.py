"""Keep each test's outcome on its item, so the browser fixture can save a screenshot when
the test failed; the Chromium page every browser test drives."""

import pytest


@pytest.hookimpl(tryfirst=True, hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    setattr(item, f"rep_{report.when}", report)


@pytest.fixture
def browser_page(request):
    """A page of Debian's chromium (Playwright, never ``playwright install``); a full-page
    screenshot is kept under the artifacts folder when the test fails."""
    sync_api = pytest.importorskip("playwright.sync_api")
    from labdriver import ARTIFACTS, CHROMIUM, LAUNCH_ARGS, TIMEOUT_MS

    if not CHROMIUM.exists():
        pytest.skip("Debian's chromium is missing (make setup installs it)")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=LAUNCH_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.set_default_timeout(TIMEOUT_MS)
        yield page
        failed = getattr(request.node, "rep_call", None)
        if failed is not None and failed.failed:
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / f"{request.node.name}.png"), full_page=True)
        browser.close()
