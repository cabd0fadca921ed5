"""Published quality of llama.cpp's weight types: perplexity increase over the unquantized model.

Copied from the ``QUANT_OPTIONS`` table in llama.cpp's ``tools/quantize/quantize.cpp`` (the text
``llama-quantize --help`` prints), as vendored in llama-cpp-python 0.3.36
(``vendor/llama.cpp/tools/quantize/quantize.cpp``, lines 34-74). Each figure is the perplexity increase
(wikitext) llama.cpp's authors measured on the model named, with its file size; types the table gives
only a bits-per-weight note for (IQ4_XS, IQ4_NL, the IQ2/IQ3 family) have no entry, and no value is
invented for them or for other engines' formats. The table states no KL-divergence.
"""

from __future__ import annotations

SOURCE = "llama.cpp tools/quantize/quantize.cpp QUANT_OPTIONS (vendored in llama-cpp-python 0.3.36)"

# type -> (perplexity increase, file size in GB as printed, model measured)
PPL_DELTA = {
    "Q2_K": (3.5199, 2.96, "Llama-3-8B"),
    "Q2_K_S": (3.1836, 2.96, "Llama-3-8B"),
    "Q3_K_S": (1.6321, 3.41, "Llama-3-8B"),
    "Q3_K_M": (0.6569, 3.74, "Llama-3-8B"),
    "Q3_K_L": (0.5562, 4.03, "Llama-3-8B"),
    "Q4_0": (0.4685, 4.34, "Llama-3-8B"),
    "Q4_1": (0.4511, 4.78, "Llama-3-8B"),
    "Q4_K_S": (0.2689, 4.37, "Llama-3-8B"),
    "Q4_K_M": (0.1754, 4.58, "Llama-3-8B"),
    "Q5_0": (0.1316, 5.21, "Llama-3-8B"),
    "Q5_1": (0.1062, 5.65, "Llama-3-8B"),
    "Q5_K_S": (0.1049, 5.21, "Llama-3-8B"),
    "Q5_K_M": (0.0569, 5.33, "Llama-3-8B"),
    "Q6_K": (0.0217, 6.14, "Llama-3-8B"),
    "Q8_0": (0.0026, 7.96, "Llama-3-8B"),
    "F16": (0.0020, 14.00, "Mistral-7B"),
    "BF16": (-0.0050, 14.00, "Mistral-7B"),
}


def quality_for(quant: str) -> dict | None:
    """``{"ppl_delta", "measured_on", "source"}`` for a llama.cpp type with a published figure, else None."""
    row = PPL_DELTA.get(str(quant).upper())
    if row is None:
        return None
    return {"ppl_delta": row[0], "measured_on": row[2], "source": SOURCE}
