; The G-code drawing example (README, "Drawing"): a 40 mm square with rounded corners and a circle in it,
; the pen down at Z <= 0 and up at Z > 0, as plotter G-code from Inkscape and friends writes it.
G21 G90 G17          ; mm, absolute, XY plane
G0 Z5                ; pen up
G0 X5 Y0
G1 Z-1 F600          ; pen down
G1 X35 Y0 F1200
G3 X40 Y5 I0 J5      ; rounded corner, counter-clockwise
G1 X40 Y35
G3 X35 Y40 I-5 J0
G1 X5 Y40
G3 X0 Y35 I0 J-5
G1 X0 Y5
G3 X5 Y0 I5 J0
G0 Z5                ; pen up
G0 X32 Y20
G1 Z-1
G2 X32 Y20 I-12 J0   ; a full circle, clockwise
G0 Z5
M2
