"""The dashboard as people use it: a real headless Chromium against a real hp-server.

Run by scripts/test-browser, which starts the server, makes the household (ann admin,
bob member, vic viewer; ann-phone and bob-phone synced over TLS) and passes:
HP_WEB (dashboard URL), HP_PASSWORD, HP_CHAINS (`hp-server chains --json`), HP_NODE
(the hp-node binary), HP_WORK (a scratch directory), HP_CERT (the server certificate).
The browser runs with JavaScript off, as the pages must work without it, and trusts
only the server's own key (an SPKI pin), not every certificate.
"""
import base64
import hashlib
import json
import os
import subprocess
import tempfile
import unittest

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.common.exceptions import StaleElementReferenceException, WebDriverException
from selenium.webdriver.support.ui import WebDriverWait

WEB = os.environ["HP_WEB"].rstrip("/")
PASSWORD = os.environ["HP_PASSWORD"]
CHAINS = {c["device"]: c["chain"] for c in json.loads(os.environ["HP_CHAINS"])}
NODE = os.environ["HP_NODE"]
WORK = os.environ["HP_WORK"]


def spki_pin(cert_path):
    """base64(SHA-256(SubjectPublicKeyInfo)) of the server's certificate, for Chromium's pin flag."""
    pub = subprocess.run(["openssl", "x509", "-in", cert_path, "-pubkey", "-noout"], check=True, capture_output=True).stdout
    der = subprocess.run(["openssl", "pkey", "-pubin", "-outform", "der"], input=pub, check=True, capture_output=True).stdout
    return base64.b64encode(hashlib.sha256(der).digest()).decode()


PIN = spki_pin(os.environ["HP_CERT"])


def browser(javascript=False, width=1200, height=900, downloads=None):
    o = webdriver.ChromeOptions()
    o.binary_location = "/usr/bin/chromium"
    for a in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
              f"--ignore-certificate-errors-spki-list={PIN}", f"--window-size={width},{height}",
              f"--user-data-dir={tempfile.mkdtemp(dir=WORK)}"]:
        o.add_argument(a)
    prefs = {}
    if not javascript:
        prefs["profile.managed_default_content_settings.javascript"] = 2
    if downloads:
        prefs.update({"download.default_directory": downloads, "download.prompt_for_download": False})
    if prefs:
        o.add_experimental_option("prefs", prefs)
    d = webdriver.Chrome(service=Service(executable_path="/usr/bin/chromedriver"), options=o)
    d.set_page_load_timeout(30)
    return d


def sign_in(d, name):
    d.get(WEB + "/login")
    d.find_element(By.NAME, "name").send_keys(name)
    d.find_element(By.NAME, "password").send_keys(PASSWORD)
    d.find_element(By.CSS_SELECTOR, "form.stack button[type=submit]").click()
    WebDriverWait(d, 15).until(lambda d: d.current_url.rstrip("/") == WEB or d.find_elements(By.CSS_SELECTOR, "p.alert[role=alert]"))
    assert d.current_url.rstrip("/") == WEB, f"{name} was not signed in: {d.current_url}: {d.find_element(By.TAG_NAME, 'main').text}"


def gone(element):
    """A wait condition: `element` has left the document. While the next page replaces it,
    Chrome may answer "Node with given id does not belong to the document" instead of a
    stale-element error; both mean the old page is gone."""
    def check(_):
        try:
            element.is_enabled()
            return False
        except StaleElementReferenceException:
            return True
        except WebDriverException as e:
            if "does not belong to the document" in str(e):
                return True
            raise
    return check


def submit(d, button):
    """Clicks a form's button and waits for the answer page to replace this one."""
    page = d.find_element(By.TAG_NAME, "html")
    button.click()
    WebDriverWait(d, 15).until(gone(page))


def api(d, path):
    """An API answer as the browser gets it (same session cookie)."""
    d.get(WEB + path)
    return json.loads(d.find_element(By.TAG_NAME, "body").text)


def heading(d):
    return d.find_element(By.TAG_NAME, "h1").text


class Dashboard(unittest.TestCase):
    def test_admin_reads_the_household_and_enrolls_a_device(self):
        d = browser()
        try:
            sign_in(d, "ann")
            cards = d.find_elements(By.CSS_SELECTOR, "section.card.chain")
            self.assertEqual(sorted(c.get_attribute("data-chain") for c in cards), sorted(CHAINS.values()))
            shown = {c.get_attribute("data-chain"): c.find_element(By.CSS_SELECTOR, ".visible-records").text for c in cards}
            overview = api(d, "/api/v1/overview")
            for person in overview["people"]:
                for chain in person["chains"]:
                    self.assertTrue(shown[chain["chain"]].startswith(f"{chain['visible_records']} in "), chain["chain"])
                    self.assertGreater(chain["visible_records"], 0)
            # A chain, its timeline, an observation's classification, a type's chart.
            d.get(WEB + "/")
            submit(d, d.find_element(By.CSS_SELECTOR, f"section[data-chain='{CHAINS['ann-phone']}'] h3 a"))
            rows = d.find_elements(By.CSS_SELECTOR, "table.timeline tbody tr")
            self.assertEqual(len(rows), 2)
            submit(d, rows[1].find_element(By.CSS_SELECTOR, "td a"))
            self.assertTrue(heading(d).startswith("Observation #2"))
            self.assertGreater(len(d.find_elements(By.CSS_SELECTOR, "table.changes tbody tr")), 0)
            d.get(WEB + f"/chains/{CHAINS['ann-phone']}")
            submit(d, d.find_element(By.LINK_TEXT, "Steps"))
            bars = d.find_elements(By.CSS_SELECTOR, "svg.chart.wide rect.bar")
            # The desktop drawing is shown, the phone's is not; a custom range takes dates.
            shown = {c: [e.value_of_css_property("display") for e in d.find_elements(By.CSS_SELECTOR, f"svg.chart.{c}")] for c in ["wide", "compact"]}
            self.assertEqual(len(shown["wide"]), 1)
            self.assertNotEqual(shown["wide"][0], "none")
            self.assertEqual(shown["compact"], ["none"])
            form = d.find_element(By.CSS_SELECTOR, "form[aria-label='Custom range']")
            self.assertEqual([i.get_attribute("type") for i in form.find_elements(By.CSS_SELECTOR, "input[name=from], input[name=to]")], ["date", "date"])
            chart = d.current_url.split("?")[0]
            series = api(d, f"/api/v1/chains/{CHAINS['ann-phone']}/types/HKQuantityTypeIdentifierStepCount")
            self.assertEqual(len(bars), len(series["days"]))
            self.assertGreater(len(bars), 0)
            # A custom range of the device's local days: exactly those bars.
            days = [x["day"] for x in series["days"]]
            d.get(chart + f"?metric=sum&from={days[1]}&to={days[2]}")
            self.assertIn(f"Showing {days[1]} to {days[2]}", d.find_element(By.CSS_SELECTOR, "nav.ranges").text)
            self.assertEqual(len(d.find_elements(By.CSS_SELECTOR, "svg.chart.wide rect.bar")), 2)
            submit(d, d.find_element(By.LINK_TEXT, "all"))
            self.assertEqual(len(d.find_elements(By.CSS_SELECTOR, "svg.chart.wide rect.bar")), len(days))
            # Admin: add a person, issue a token, enroll a real node with the command shown, revoke it.
            d.get(WEB + "/admin")
            form = d.find_element(By.CSS_SELECTOR, "form[action='/admin/people']")
            form.find_element(By.NAME, "name").send_keys("dan")
            form.find_element(By.NAME, "password").send_keys(PASSWORD)
            for option in form.find_elements(By.CSS_SELECTOR, "select[name=role] option"):
                if option.text == "member":
                    option.click()
            submit(d, form.find_element(By.CSS_SELECTOR, "button"))
            self.assertEqual(d.current_url, WEB + "/admin", "a change redirects back to the page")
            self.assertIn("Added dan.", d.page_source)
            form = d.find_element(By.CSS_SELECTOR, "form[action='/admin/tokens']")
            form.find_element(By.NAME, "device").send_keys("dan-phone")
            for option in form.find_elements(By.CSS_SELECTOR, "select[name=person] option"):
                if option.text == "dan":
                    option.click()
            submit(d, form.find_element(By.CSS_SELECTOR, "button"))
            command = d.find_element(By.ID, "enroll-command").text
            self.assertTrue(command.startswith("hp-node enroll "), command)
            token = command.split(" ", 2)[2]
            subprocess.run([NODE, "--home", os.path.join(WORK, "dan-phone"), "enroll", token], check=True, capture_output=True)
            row = [r for r in d.find_elements(By.CSS_SELECTOR, "table.devices tbody tr") if r.text.startswith("dan-phone")][0]
            submit(d, row.find_element(By.CSS_SELECTOR, "button"))
            # Revoking asks first.
            self.assertEqual(heading(d), "Revoke dan-phone?")
            submit(d, d.find_element(By.CSS_SELECTOR, "button.danger"))
            self.assertIn("Revoked dan-phone", d.page_source)
            row = [r for r in d.find_elements(By.CSS_SELECTOR, "table.devices tbody tr") if r.text.startswith("dan-phone")][0]
            self.assertIn("revoked", row.text)
        finally:
            d.quit()

    def test_admin_page_cannot_surprise(self):
        d = browser()
        try:
            sign_in(d, "ann")
            d.get(WEB + "/admin")
            # Each role select shows the person's role: pressing "Set role" untouched changes nothing.
            row = d.find_element(By.CSS_SELECTOR, "tr[data-person='vic']")
            self.assertEqual(row.find_element(By.CSS_SELECTOR, "select[name=role] option:checked").text, "viewer")
            submit(d, row.find_element(By.XPATH, ".//button[text()='Set role']"))
            self.assertIn("vic is already viewer; nothing changed.", d.page_source)
            self.assertEqual([p["role"] for p in api(d, "/api/v1/admin/people") if p["name"] == "vic"], ["viewer"])
            # A token needs a chosen person: the untouched form does not submit.
            d.get(WEB + "/admin")
            form = d.find_element(By.CSS_SELECTOR, "form[action='/admin/tokens']")
            form.find_element(By.NAME, "device").send_keys("nobodys-phone")
            form.find_element(By.CSS_SELECTOR, "button").click()
            self.assertEqual(d.current_url, WEB + "/admin")
            self.assertEqual(d.find_elements(By.ID, "enroll-command"), [])
            d.get(WEB + "/admin")
            self.assertNotIn("nobodys-phone", d.find_element(By.CSS_SELECTOR, "table.devices").text)
            # Making someone admin asks first; Cancel leaves them as they were.
            d.get(WEB + "/admin")
            row = d.find_element(By.CSS_SELECTOR, "tr[data-person='bob']")
            for option in row.find_elements(By.CSS_SELECTOR, "select[name=role] option"):
                if option.text == "admin":
                    option.click()
            submit(d, row.find_element(By.XPATH, ".//button[text()='Set role']"))
            self.assertEqual(heading(d), "Make bob admin?")
            submit(d, d.find_element(By.LINK_TEXT, "Cancel"))
            self.assertEqual([p["role"] for p in api(d, "/api/v1/admin/people") if p["name"] == "bob"], ["member"])
        finally:
            d.quit()

    def test_loss_and_a_refused_device_are_told_plainly(self):
        d = browser()
        try:
            sign_in(d, "ann")
            # The reinstalled watch: refused, with the reason and what to do; its last good sync stays.
            watch = d.find_element(By.CSS_SELECTOR, f"section[data-chain='{CHAINS['ann-watch']}']")
            self.assertTrue(watch.find_element(By.CSS_SELECTOR, ".device-state").text.startswith("refused since"))
            self.assertIn("What to do:", watch.text)
            self.assertNotEqual(watch.find_element(By.XPATH, ".//dt[text()='Last good sync']/following-sibling::dd[1]").text, "never")
            # The tablet lost three step records: its card names the loss, the observation page says loss in words, once.
            tablet = d.find_element(By.CSS_SELECTOR, f"section[data-chain='{CHAINS['ann-tablet']}']")
            self.assertIn("classified loss at observation 2: 3 record(s) in 1 type(s) (Steps)", tablet.text)
            submit(d, tablet.find_element(By.CSS_SELECTOR, "dd a[href$='/observations/2']"))
            self.assertEqual(heading(d).split(" ")[:2], ["Observation", "#2"])
            self.assertIn("Loss found: records disappeared with nothing of their own source in their place, in Steps.", d.page_source)
            self.assertNotIn("not loss", d.page_source)
            rows = d.find_elements(By.CSS_SELECTOR, "table.changes tbody tr")
            self.assertEqual([r.find_element(By.CSS_SELECTOR, "td.verdict").text for r in rows], ["loss"])
            self.assertEqual(rows[0].find_element(By.CSS_SELECTOR, "td").text, "Steps")
        finally:
            d.quit()

    def test_alerts_page_adds_a_channel_and_acknowledges_an_alert(self):
        d = browser()
        try:
            sign_in(d, "ann")
            submit(d, d.find_element(By.LINK_TEXT, "Alerts"))
            self.assertEqual(heading(d), "Alerts")
            # A channel, added by form: listed, its secret never shown back.
            form = d.find_element(By.CSS_SELECTOR, "form[action='/alerts/channels']")
            form.find_element(By.CSS_SELECTOR, "select[name=kind] option[value=webhook]").click()
            form.find_element(By.NAME, "target").send_keys("https://hooks.example/ann")
            form.find_element(By.NAME, "secret").send_keys("ann-browser-secret-0123456789")
            submit(d, form.find_element(By.CSS_SELECTOR, "button[type=submit]"))
            self.assertIn("Added a webhook channel", d.find_element(By.CSS_SELECTOR, "p.alert[role=status]").text)
            channels = d.find_elements(By.CSS_SELECTOR, "table.channels tbody tr[data-channel]")
            self.assertEqual([r.find_element(By.CSS_SELECTOR, "td.target").text for r in channels], ["https://hooks.example/ann"])
            self.assertNotIn("ann-browser-secret-0123456789", d.page_source)
            # The server evaluates every 5 s here (`alerts.evaluate_seconds`; a minute by
            # default): the tablet's loss is on the page by the next round.
            def loss_row(d):
                d.get(WEB + "/alerts")
                rows = d.find_elements(By.CSS_SELECTOR, f"table.alerts tbody tr[data-alert=loss_found][data-chain='{CHAINS['ann-tablet']}'].firing")
                return rows[0] if rows else False
            row = WebDriverWait(d, 45, poll_frequency=2).until(loss_row)
            self.assertIn("ann-tablet", row.text)
            self.assertIn("Steps: 3 records lost", row.text)
            submit(d, row.find_element(By.XPATH, ".//button[text()='Acknowledge']"))
            self.assertIn("Acknowledged", d.find_element(By.CSS_SELECTOR, "p.alert[role=status]").text)
            alerts = [a for a in api(d, "/api/v1/alerts") if a["condition"] == "loss_found" and a["chain"] == CHAINS["ann-tablet"]]
            self.assertEqual(len(alerts), 1)
            self.assertEqual(alerts[0]["acknowledged_by"], "ann")
        finally:
            d.quit()

    def test_download_an_export_and_verify_it(self):
        folder = tempfile.mkdtemp(dir=WORK)
        d = browser(downloads=folder)
        try:
            sign_in(d, "bob")
            d.get(WEB + f"/chains/{CHAINS['bob-phone']}")
            form = d.find_element(By.CSS_SELECTOR, "form[action$='/export']")
            form.find_element(By.NAME, "at").send_keys("2")
            form.find_element(By.CSS_SELECTOR, "button").click()
            WebDriverWait(d, 30).until(lambda _: [f for f in os.listdir(folder) if f.endswith(".json")])
            name = [f for f in os.listdir(folder) if f.endswith(".json")][0]
            self.assertTrue(name.startswith("healthprobe-") and name.endswith("-records-at-2.json"), name)
            check = subprocess.run([NODE, "--home", os.path.join(WORK, "verifier"), "verify-export", os.path.join(folder, name)],
                                   capture_output=True, text=True)
            self.assertEqual(check.returncode, 0, check.stdout + check.stderr)
        finally:
            d.quit()

    def test_member_is_denied_another_persons_chain(self):
        d = browser()
        try:
            sign_in(d, "bob")
            cards = [c.get_attribute("data-chain") for c in d.find_elements(By.CSS_SELECTOR, "section.card.chain")]
            self.assertEqual(cards, [CHAINS["bob-phone"]])
            for path in [f"/chains/{CHAINS['ann-phone']}", f"/chains/{CHAINS['ann-phone']}/observations/1",
                         f"/types/HKQuantityTypeIdentifierStepCount"]:
                d.get(WEB + path)
                if path.startswith("/types/"):
                    self.assertEqual([f.get_attribute("data-chain") for f in d.find_elements(By.CSS_SELECTOR, "figure.panel")], [CHAINS["bob-phone"]])
                else:
                    self.assertEqual(heading(d), "Not found", path)
            d.get(WEB + "/admin")
            self.assertEqual(heading(d), "Not allowed")
        finally:
            d.quit()

    def test_viewer_sees_only_what_is_shared_and_changes_nothing(self):
        v, a = browser(), browser()
        try:
            sign_in(v, "vic")
            self.assertEqual(v.find_elements(By.CSS_SELECTOR, "section.card.chain"), [])
            sign_in(a, "ann")
            a.get(WEB + f"/chains/{CHAINS['bob-phone']}")
            form = a.find_element(By.CSS_SELECTOR, "form[action$='/shares']")
            for option in form.find_elements(By.CSS_SELECTOR, "select[name=person] option"):
                if option.text == "vic":
                    option.click()
            submit(a, form.find_element(By.CSS_SELECTOR, "button"))
            self.assertIn("vic", a.find_element(By.CSS_SELECTOR, ".share").text)
            v.get(WEB + "/")
            self.assertEqual([c.get_attribute("data-chain") for c in v.find_elements(By.CSS_SELECTOR, "section.card.chain")], [CHAINS["bob-phone"]])
            v.get(WEB + f"/chains/{CHAINS['bob-phone']}")
            actions = [f.get_attribute("action") for f in v.find_elements(By.TAG_NAME, "form") if f.get_attribute("method") == "post"]
            self.assertEqual(actions, [WEB + "/logout"], "a viewer's page offers no change but signing out")
            v.get(WEB + "/admin")
            self.assertEqual(heading(v), "Not allowed")
        finally:
            v.quit()
            a.quit()

    def test_cross_site_form_is_refused(self):
        d = browser()
        try:
            sign_in(d, "ann")
            evil = os.path.join(WORK, "evil.html")
            with open(evil, "w") as f:
                f.write(f"""<!doctype html><form method="post" action="{WEB}/admin/people">
                <input name="name" value="eve"><input name="role" value="admin"><input name="password" value="{PASSWORD}">
                <button id="go" type="submit">go</button></form>""")
            d.get("file://" + evil)
            submit(d, d.find_element(By.ID, "go"))
            self.assertIn(heading(d), ["Refused", "Sign in first"])
            d.get(WEB + "/admin")
            people = [r.text.split(" ")[0] for r in d.find_elements(By.CSS_SELECTOR, "table.people tbody tr")]
            self.assertNotIn("eve", people)
        finally:
            d.quit()

    def test_readable_on_a_phone(self):
        d = browser(javascript=True, width=390, height=844)
        try:
            sign_in(d, "ann")
            for path in ["/", f"/chains/{CHAINS['ann-phone']}", "/types/HKQuantityTypeIdentifierStepCount",
                         f"/chains/{CHAINS['ann-phone']}/observations/2", f"/chains/{CHAINS['ann-phone']}/observations/2/visible", "/admin", "/alerts"]:
                d.get(WEB + path)
                overflow = d.execute_script("return document.documentElement.scrollWidth - window.innerWidth")
                self.assertLessEqual(overflow, 1, f"{path} scrolls sideways by {overflow}px on a phone")
                # Tables reflow into labelled rows: no header row, no table wider than the screen.
                inner = d.execute_script("return window.innerWidth")
                for table in d.find_elements(By.CSS_SELECTOR, "table.reflow"):
                    self.assertFalse(table.find_element(By.CSS_SELECTOR, "thead").is_displayed(), path)
                    self.assertLessEqual(table.size["width"], inner, path)
            d.get(WEB + "/types/HKQuantityTypeIdentifierStepCount")
            compact = d.find_elements(By.CSS_SELECTOR, "svg.chart.compact")
            self.assertGreater(len(compact), 0)
            self.assertTrue(all(e.value_of_css_property("display") != "none" for e in compact))
            self.assertTrue(all(e.value_of_css_property("display") == "none" for e in d.find_elements(By.CSS_SELECTOR, "svg.chart.wide")))
        finally:
            d.quit()


if __name__ == "__main__":
    unittest.main(verbosity=2)
