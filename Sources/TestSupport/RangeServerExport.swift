/// The range server is part of the test kit.
@_exported import RangeServer
