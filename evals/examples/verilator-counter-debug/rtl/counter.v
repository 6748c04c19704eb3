// Modulo-N event counter for a readout window.
// Counts `en` pulses from 0 to N-1, then wraps to 0 and raises `wrap` for exactly one cycle
// (the cycle in which the counter goes from N-1 back to 0). Synchronous active-high reset.
module counter #(
    parameter int WIDTH = 4,
    parameter int N = 10
) (
    input  logic             clk,
    input  logic             rst,
    input  logic             en,
    output logic [WIDTH-1:0] count,
    output logic             wrap
);
  localparam logic [WIDTH-1:0] LAST = WIDTH'(N);

  always_ff @(posedge clk) begin
    if (rst) begin
      count <= '0;
      wrap  <= 1'b0;
    end else if (en) begin
      if (count == LAST) begin
        count <= '0;
        wrap  <= 1'b1;
      end else begin
        count <= count + 1'b1;
        wrap  <= 1'b0;
      end
    end else begin
      wrap <= 1'b0;
    end
  end
endmodule
