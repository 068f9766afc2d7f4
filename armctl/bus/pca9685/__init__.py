"""The PCA9685 16-channel PWM chip on I2C: its registers and timing (``chip``), the I2C transports (``i2c``),
the backend (``backend``)."""

from armctl.core.lazy import reexport

__getattr__, __dir__ = reexport(__name__, "armctl.bus.pca9685.backend")
