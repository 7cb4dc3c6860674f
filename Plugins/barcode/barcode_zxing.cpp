// The zxing-cpp engine: ZXing::ReadBarcodes over a grey picture, read in place (no copy).
//
// zxing-cpp is C++: this file is the one place C++ runs, behind the C function
// zxing_engine_scan. No exception crosses it: every one is caught and becomes a negative errno.
// The library is zxing-cpp 3.1.1, built by scripts/build-zxing.sh (why not Debian's 1.4: there).
#include <ZXing/ReadBarcode.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <new>
#include <vector>

#include "barcode_engine.h"

namespace {

using ZXing::BarcodeFormat;

// What zxing looks for, per symbology of ours. zxing's base formats match their variants
// (QRCode would match Micro QR too), so QR is asked for by its two models.
std::vector<BarcodeFormat> FormatsOf(symbology_id id) {
    switch (id) {
    case SYM_QRCODE: return {BarcodeFormat::QRCodeModel1, BarcodeFormat::QRCodeModel2};
    case SYM_MICROQR: return {BarcodeFormat::MicroQRCode};
    case SYM_DATAMATRIX: return {BarcodeFormat::DataMatrix};
    case SYM_AZTEC: return {BarcodeFormat::Aztec};
    case SYM_PDF417: return {BarcodeFormat::PDF417};
    case SYM_MAXICODE: return {BarcodeFormat::MaxiCode};
    case SYM_EAN13: return {BarcodeFormat::EAN13};
    case SYM_EAN8: return {BarcodeFormat::EAN8};
    case SYM_UPCA: return {BarcodeFormat::UPCA};
    case SYM_UPCE: return {BarcodeFormat::UPCE};
    case SYM_CODE128: return {BarcodeFormat::Code128};
    case SYM_CODE39: return {BarcodeFormat::Code39Std, BarcodeFormat::Code39Ext};
    case SYM_CODE93: return {BarcodeFormat::Code93};
    case SYM_CODABAR: return {BarcodeFormat::Codabar};
    case SYM_I25: return {BarcodeFormat::ITF};
    case SYM_DATABAR: return {BarcodeFormat::DataBar};
    case SYM_DATABAR_EXP: return {BarcodeFormat::DataBarExp};
    default: return {};
    }
}

// Our symbology for what zxing read; SYM_COUNT for one we do not report.
symbology_id SymbologyOf(BarcodeFormat f) {
    if (f <= BarcodeFormat::MicroQRCode) return SYM_MICROQR;
    if (f <= BarcodeFormat::RMQRCode) return SYM_COUNT;
    if (f <= BarcodeFormat::QRCode) return SYM_QRCODE;
    if (f <= BarcodeFormat::DataMatrix) return SYM_DATAMATRIX;
    if (f <= BarcodeFormat::Aztec) return SYM_AZTEC;
    if (f <= BarcodeFormat::PDF417) return SYM_PDF417;
    if (f <= BarcodeFormat::MaxiCode) return SYM_MAXICODE;
    if (f <= BarcodeFormat::EAN13) return SYM_EAN13;
    if (f <= BarcodeFormat::EAN8) return SYM_EAN8;
    if (f <= BarcodeFormat::UPCA) return SYM_UPCA;
    if (f <= BarcodeFormat::UPCE) return SYM_UPCE;
    if (f <= BarcodeFormat::Code128) return SYM_CODE128;
    if (f <= BarcodeFormat::Code39) return SYM_CODE39;
    if (f <= BarcodeFormat::Code93) return SYM_CODE93;
    if (f <= BarcodeFormat::Codabar) return SYM_CODABAR;
    if (f <= BarcodeFormat::ITF) return SYM_I25;
    if (f <= BarcodeFormat::DataBarExp) return SYM_DATABAR_EXP;
    if (f <= BarcodeFormat::DataBar) return SYM_DATABAR;
    return SYM_COUNT;
}

const char *ContentTypeName(ZXing::ContentType type) {
    switch (type) {
    case ZXing::ContentType::Text: return "text";
    case ZXing::ContentType::Binary: return "binary";
    case ZXing::ContentType::Mixed: return "mixed";
    case ZXing::ContentType::GS1: return "gs1";
    case ZXing::ContentType::ISO15434: return "iso15434";
    case ZXing::ContentType::UnknownECI: return "unknown_eci";
    }
    return "";
}

// zxing gives the angle of the code's reading direction in degrees, clockwise from the x axis.
code_orientation OrientationOf(int degrees) {
    int quarter = static_cast<int>(std::lround(degrees / 90.0)) % 4;
    if (quarter < 0) quarter += 4;
    return static_cast<code_orientation>(quarter); // 0 up, 1 right, 2 down, 3 left
}

int Scan(symbology_set symbologies, bool try_harder, const scan_image *picture, const scan_region *r, detections *found) {
    std::vector<BarcodeFormat> formats;
    for (int i = 0; i < SYM_COUNT; i++)
        if (symbologies & SYMBOLOGY_BIT(i))
            for (BarcodeFormat f : FormatsOf(static_cast<symbology_id>(i))) formats.push_back(f);
    if (formats.empty()) return 0;
    // Inversion is the plugin's own retry (for both engines alike); rotation of linear codes
    // and the extra scan lines are what try_harder buys.
    ZXing::ReaderOptions options;
    options.setFormats(ZXing::BarcodeFormats(std::move(formats)))
        .setTryHarder(try_harder)
        .setTryRotate(try_harder)
        .setTryInvert(false)
        .setTryDownscale(true);
    ZXing::ImageView view(picture->pixels, static_cast<int>(picture->width), static_cast<int>(picture->height),
                          ZXing::ImageFormat::Lum, static_cast<int>(picture->stride));
    const ZXing::Barcodes results = ZXing::ReadBarcodes(view, options);
    size_t before = found->count;
    for (const ZXing::Barcode &result : results) {
        if (!result.isValid()) continue;
        detection d{};
        d.symbology = SymbologyOf(result.format());
        if (d.symbology == SYM_COUNT) continue;
        d.engine = ENGINE_ZXING;
        const std::vector<uint8_t> &bytes = result.bytes();
        d.data = reinterpret_cast<char *>(const_cast<uint8_t *>(bytes.data()));
        d.length = static_cast<unsigned>(bytes.size());
        const ZXing::ContentType type = result.contentType();
        d.binary = type == ZXing::ContentType::Binary;
        // The text as the code's character set (ECI, or the symbology's default) says; kept
        // only when it holds no NUL (JSON readers and C strings would cut it there).
        std::string text = d.binary ? std::string() : result.text();
        // One name whichever engine reads it: a UPC-A is an EAN-13 whose first digit is 0;
        // zxing reports it as such, zbar as the 12-digit UPC-A. Report it as zbar does.
        if (d.symbology == SYM_EAN13 && (symbologies & SYMBOLOGY_BIT(SYM_UPCA)) && d.length == 13 && d.data[0] == '0') {
            d.symbology = SYM_UPCA;
            d.data++;
            d.length--;
            text.erase(0, 1);
        }
        if (!d.binary && text.find('\0') == std::string::npos) d.text = const_cast<char *>(text.c_str());
        d.quality = result.lineCount() > 0 ? result.lineCount() : 1;
        d.orientation = OrientationOf(result.orientation());
        d.inverted = r->inverted != result.isInverted();
        d.mirrored = r->mirrored != result.isMirrored();
        const ZXing::Position &p = result.position();
        double points[4][2];
        for (int i = 0; i < 4; i++) {
            double x = p[i].x, y = p[i].y;
            if (r->mirrored) x = static_cast<double>(picture->width) - 1 - x;
            points[i][0] = x + r->x0;
            points[i][1] = y + r->y0;
        }
        if (r->mirrored) { // flipping left to right turns the clockwise order around: TL<->TR, BL<->BR
            double swapped[4][2] = {{points[1][0], points[1][1]}, {points[0][0], points[0][1]},
                                    {points[3][0], points[3][1]}, {points[2][0], points[2][1]}};
            std::memcpy(points, swapped, sizeof points);
        }
        detection_set_geometry(&d, points, 4);
        code_details &x = d.details;
        x.known = true;
        std::snprintf(x.ec_level, sizeof x.ec_level, "%s", result.ecLevel().c_str());
        std::snprintf(x.content_type, sizeof x.content_type, "%s", ContentTypeName(type));
        std::snprintf(x.aim_id, sizeof x.aim_id, "%s", result.symbologyIdentifier().c_str());
        x.has_eci = result.hasECI();
        x.sequence_index = result.isPartOfSequence() ? result.sequenceIndex() : -1;
        x.sequence_count = result.isPartOfSequence() ? result.sequenceSize() : -1;
        std::snprintf(x.sequence_id, sizeof x.sequence_id, "%s", result.isPartOfSequence() ? result.sequenceId().c_str() : "");
        if (detections_add(found, &d, r->frame_width, r->frame_height) != 0) return -ENOMEM;
    }
    return static_cast<int>(found->count - before);
}

} // namespace

extern "C" int zxing_engine_scan(symbology_set symbologies, bool try_harder, const scan_image *image, const scan_region *region,
                                 detections *found) {
    try {
        return Scan(symbologies, try_harder, image, region, found);
    } catch (const std::bad_alloc &) {
        return -ENOMEM;
    } catch (...) {
        return -EIO;
    }
}
