"""``--junit FILE``: a run's checks as JUnit XML, the test report every CI system reads (GitHub
Actions through a reporter action, GitLab's ``artifacts:reports:junit``, Jenkins). One
``<testsuite>`` per run; each SLO check, gate and regression check a ``<testcase>`` whose
message holds the measured value and the threshold; a failed check a ``<failure>``, an
inconclusive one ``<skipped>``. :mod:`agentx.report.ci` decides the cases."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass

from agentx.core.errors import ShapeError


@dataclass(frozen=True, slots=True)
class JUnitCase:
    """One check: ``classname`` is its kind (``slo``, ``gate``, ``regression``, ``run``);
    ``message`` the measured value against the threshold; ``failure`` or ``skipped`` why."""

    name: str
    classname: str
    message: str
    failure: str | None = None
    skipped: str | None = None

    def element(self) -> ET.Element:
        case = ET.Element("testcase", {"name": self.name, "classname": self.classname})
        if self.failure is not None:
            ET.SubElement(case, "failure", {"message": self.failure, "type": self.classname})
        elif self.skipped is not None:
            ET.SubElement(case, "skipped", {"message": self.skipped})
        ET.SubElement(case, "system-out").text = self.message
        return case

    @classmethod
    def from_element(cls, case: ET.Element) -> JUnitCase:
        failure, skipped, out = case.find("failure"), case.find("skipped"), case.find("system-out")
        return cls(
            case.get("name", ""),
            case.get("classname", ""),
            (out.text or "") if out is not None else "",
            None if failure is None else failure.get("message", ""),
            None if skipped is None else skipped.get("message", ""),
        )


@dataclass(frozen=True, slots=True)
class JUnitSuite:
    """A run's checks (``name``: ``agentx replay``, ``agentx report``, ``agentx sweep``)."""

    name: str
    cases: tuple[JUnitCase, ...]
    time_s: float | None = None  # the run's measured duration

    @property
    def failures(self) -> int:
        return sum(1 for c in self.cases if c.failure is not None)

    @property
    def skipped(self) -> int:
        return sum(1 for c in self.cases if c.failure is None and c.skipped is not None)

    def to_xml(self) -> str:
        attrs = {
            "name": self.name,
            "tests": str(len(self.cases)),
            "failures": str(self.failures),
            "errors": "0",
            "skipped": str(self.skipped),
        }
        if self.time_s is not None:
            attrs["time"] = f"{self.time_s:.3f}"
        suites = ET.Element("testsuites", {"name": "agentx"})
        suite = ET.SubElement(suites, "testsuite", attrs)
        suite.extend(c.element() for c in self.cases)
        ET.indent(suites)
        return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, "unicode") + "\n"

    @classmethod
    def from_xml(cls, xml: str) -> JUnitSuite:
        try:
            root = ET.fromstring(xml)
        except ET.ParseError as exc:
            raise ShapeError(f"not JUnit XML ({exc})") from None
        suite = root if root.tag == "testsuite" else root.find("testsuite")
        if suite is None:
            raise ShapeError("not JUnit XML (no <testsuite>)")
        time = suite.get("time")
        return cls(
            suite.get("name", ""),
            tuple(JUnitCase.from_element(c) for c in suite.iter("testcase")),
            None if time is None else float(time),
        )
