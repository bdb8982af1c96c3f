/// Every target that uses the archive-level helpers has the basic ones too.
@_exported import HealthProbeTestBasics
