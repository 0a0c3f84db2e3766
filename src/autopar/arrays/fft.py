"""``autopar.fft``: the Array API standard's Fourier transform extension, and NumPy's 2-D transforms."""

from autopar.arrays._fft import (
    fft,
    fft2,
    fftfreq,
    fftn,
    fftshift,
    hfft,
    ifft,
    ifft2,
    ifftn,
    ifftshift,
    ihfft,
    irfft,
    irfft2,
    irfftn,
    rfft,
    rfft2,
    rfftfreq,
    rfftn,
)

__all__ = ["fft", "fft2", "fftfreq", "fftn", "fftshift", "hfft", "ifft", "ifft2", "ifftn", "ifftshift", "ihfft", "irfft",
           "irfft2", "irfftn", "rfft", "rfft2", "rfftfreq", "rfftn"]  # fmt: skip
